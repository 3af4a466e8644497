"""bbsard-audit: translation validation and dataset audit for bBSARD."""

__version__ = "0.1.0"
