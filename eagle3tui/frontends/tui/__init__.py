"""The Textual front end. The only package of eagle3tui that imports Textual."""
