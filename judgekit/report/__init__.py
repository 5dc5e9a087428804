"""Reports as data (headings, paragraphs, tables) and their renderers: Markdown, HTML,
CSV, figures. Method packages build their documents with these blocks."""

__all__: list[str] = []
