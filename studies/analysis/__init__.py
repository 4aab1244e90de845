"""Pure NumPy/SciPy statistics over ratings. No Django import here (see ARCHITECTURE.md)."""
