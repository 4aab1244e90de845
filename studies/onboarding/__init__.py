"""Rater onboarding: practice items with feedback, then a pass mark, before a rater gets a slot."""
