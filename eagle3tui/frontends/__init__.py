"""Front ends over the read model: the CLI, --watch and the TUI."""
