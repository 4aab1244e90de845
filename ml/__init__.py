"""Plain PyTorch + transformers code for learned dialogue metrics. No Django import here."""
