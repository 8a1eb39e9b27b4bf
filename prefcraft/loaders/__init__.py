"""Benchmark loaders: rows in, validated records out, with errors that name the file, row and field."""
