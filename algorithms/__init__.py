"""The library of collective algorithms (filled below)."""
