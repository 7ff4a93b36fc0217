"""The web app's pages. Views are thin: services and selectors do the work."""
