package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// defaultRecordDir is where `readyline run --record NAME` writes NAME: a
// directory of readyline's own, which the image does not have and the
// DaemonSet has only when a volume is mounted there (deploy/demo).
const defaultRecordDir = "/var/lib/readyline/recordings"

// registerRecordFlags registers --record and --record-dir. --record has an
// environment twin like every flag, so the ConfigMap can turn a recording
// on; --record-dir has none, on purpose: whoever may edit the ConfigMap
// could otherwise point the daemon, root on the node with the host's
// /proc/1/root in reach, at any file of the node to create or truncate.
// The directory is set where the pod's volumes are, in the DaemonSet's
// args, or on the command line of a daemon run by hand.
func registerRecordFlags(fs *flagSet, name, dir *string) {
	fs.String(name, "record", "", "also write every event the correlator sees to the file of this name in --record-dir (JSON lines, for 'readyline replay'); a file name, not a path")
	fs.StringVar(dir, "record-dir", defaultRecordDir, "the directory --record writes in; nothing outside it is opened, through .. or a symlink either (no environment twin: the ConfigMap names the file, not where it goes)")
}

// validateRecordName refuses a --record that is not a plain file name.
func validateRecordName(name, dir string, stderr io.Writer) error {
	if name == "" || (name == filepath.Base(name) && name != "." && name != "..") {
		return nil
	}
	fmt.Fprintf(stderr, "--record: %q is not a file name: the recording is written in --record-dir (%s)\n", name, dir)
	return errUsage
}

// openRecording creates (or truncates) the recording name in dir. It is
// opened through an os.Root of dir, so that neither "..", nor an absolute
// symlink, nor a symlink that leads out of dir can make the daemon create
// or truncate a file anywhere else on the node. What is there already must
// be a regular file: a FIFO put there would hold the daemon's start until a
// reader came (it is opened without waiting, and refused), a device would
// take the events.
func openRecording(dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the recording directory (--record-dir, a volume in a pod): %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the recording %s in %s: %w", name, dir, err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("creating the recording %s in %s: %w", name, dir, err)
	case !st.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("creating the recording %s in %s: it is a %s, not a regular file", name, dir, fileKind(st.Mode()))
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("truncating the recording %s in %s: %w", name, dir, err)
	}
	return f, nil
}

// fileKind names the kind of file mode is, for messages.
func fileKind(mode os.FileMode) string {
	switch {
	case mode&os.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case mode&os.ModeSocket != 0:
		return "socket"
	case mode&os.ModeDevice != 0:
		return "device"
	case mode.IsDir():
		return "directory"
	}
	return "special file"
}
