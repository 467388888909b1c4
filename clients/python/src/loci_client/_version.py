"""The version of the loci-client package."""

__version__ = "0.1.0"
