//go:build !unix

package folder

import "os"

// openFlags open a file for reading; outside Unix, folders hold no named
// pipes that could block the open.
const openFlags = os.O_RDONLY
