"""The entities a text names (people, projects, technologies, identifiers, hosts, paths), read by
rules with no model and no database: the graph links memories through them, imports map other
tools' entities onto them, and search judges what a memory is about by them."""
