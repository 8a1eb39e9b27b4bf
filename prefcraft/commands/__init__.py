"""What each command-line command does, as plain functions the CLI calls and tests can call too."""
