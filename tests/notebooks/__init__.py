"""Checks of the committed notebooks and of the Binder environment that runs them."""
