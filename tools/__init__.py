"""Project tools that are not part of the package (docs_outputs: the docs' shown
output)."""
