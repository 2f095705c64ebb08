"""Status pages: the owner API, the public JSON and HTML pages, feeds and badges."""
