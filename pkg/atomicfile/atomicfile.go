// Package atomicfile replaces a file so that a crash or an error leaves the old content or the new one, never a part.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Options are WriteWith's choices beyond the data.
type Options struct {
	// Perm is the permission bits of the file written.
	Perm fs.FileMode

	// Keep makes the replacement of an existing file keep that file's
	// owner, group and permission bits (Perm is then only a new file's):
	// a file that root rewrites for the user a daemon runs as (auditd's
	// tokens file) stays that user's, and stays as private as its owner
	// made it. Where the system has no owners, only the mode is kept.
	Keep bool

	// Check, when set, runs with the name of the complete temporary file
	// (its data synced, its owner and mode final) just before it replaces
	// the file; an error abandons the write, leaving the file as it was,
	// as visudo -c checks a sudoers file before installing it.
	Check func(tmp string) error
}

// Write replaces path with data, mode perm: a temporary file in the same
// directory (so the rename cannot cross file systems), written and synced,
// renamed over path, then the directory synced. On an error path is
// unchanged and no temporary file is left. A symbolic link at path is
// itself replaced; resolve it first to replace the file it names.
func Write(path string, data []byte, perm fs.FileMode) error {
	return WriteWith(path, data, Options{Perm: perm})
}

// WriteWith is Write with o: it can keep an existing file's owner and
// mode, and check the new file before it replaces the old one.
func WriteWith(path string, data []byte, o Options) (err error) {
	perm := o.Perm
	var old fs.FileInfo
	if o.Keep {
		switch fi, err := os.Stat(path); {
		case err == nil:
			old, perm = fi, fi.Mode().Perm()
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // O_EXCL, 0600
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if old != nil {
		if err := keepOwner(tmp, old); err != nil {
			return err
		}
	}
	// Chmod after any chown, which may clear set-id bits; and not the
	// umask: the mode is the caller's decision (or the old file's).
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if o.Check != nil {
		if err := o.Check(tmp.Name()); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	SyncDir(dir)
	return nil
}

// ownerError is a failed chown of the temporary file, told without the
// temporary file's name (which means nothing to a reader).
func ownerError(uid, gid uint32, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot give the new file the owner of the old one (uid %d, gid %d): %w", uid, gid, err)
}

// SyncDir makes a rename in dir durable, best effort: some file systems
// refuse to sync a directory, and the rename is done and visible anyway.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
