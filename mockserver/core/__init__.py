"""Ground: the one error type, the settings, the clock, the version and bounded YAML. Imports nothing of the package."""
