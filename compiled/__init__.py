"""Compiled programs (JSON) shipped with prefcraft, one folder per program; see index.json."""
