"""The package version, in a module of its own so that any stage can name it without
importing the package API (mdae_fmu/__init__ imports api, which reaches the exporter)."""

VERSION = "0.1.0"
__version__ = VERSION
