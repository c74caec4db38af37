// Package folder is the template source for a local folder (--templates,
// TEMPLATES_DIR): it loads the folder's *.json files into a
// templates.Catalog, watches the folder with fsnotify so template authors
// see their edits at once, saves templates into it, and reads the files
// templates list as resources.
//
// Every file is opened through an os.Root for the folder, so neither a path
// nor a symbolic link can lead out of it, even a link swapped in while the
// file is being opened.
package folder
