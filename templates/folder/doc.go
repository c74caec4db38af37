// Package folder is the template source for a local folder (--templates,
// TEMPLATES_DIR): it loads the folder's *.json files into a
// templates.Catalog, watches the folder with fsnotify so template authors
// see their edits at once, saves templates into it, and reads the files
// templates list as resources.
package folder
