package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// The most rwc reads of one spec or backfill file, and of a spec
// directory's files together. A spec is a few kilobytes; a larger file is
// a mistake or an attack (/dev/zero behind a link would be read forever).
const (
	MaxFileSize  = 8 << 20
	MaxTotalSize = 64 << 20
)

// Refused is why rwc will not read a spec path. It is decided before a
// byte of the path is read, and Load quotes nothing of such a file.
type Refused struct{ Reason, Hint string }

func (r *Refused) Error() string { return r.Reason }

// DirFS is the spec directory dir on disk as rwc reads it. Specs arrive in
// pull requests from anyone while CI holds secrets, so it refuses what a
// spec path must not be: a symbolic link leading out of the repository
// that holds dir (out of dir itself outside a repository), into a .git
// directory, or (given tracked) to a file git does not track, such as
// credentials CI wrote into the work tree; anything but a directory or a
// regular file; a file over MaxFileSize, and more than MaxTotalSize in all.
func DirFS(dir string, tracked Tracked) fs.FS {
	d := &dirFS{dir: dir, tracked: tracked, total: new(atomic.Int64)}
	d.root = sync.OnceValues(func() (boundaryDir, error) { return boundary(dir) })
	return d
}

// Tracked reports whether git tracks the file at an absolute path; nil
// when rwc knows no repository.
type Tracked func(abs string) bool

type dirFS struct {
	dir     string
	root    func() (boundaryDir, error)
	tracked Tracked
	total   *atomic.Int64
}

func (d *dirFS) Open(name string) (fs.File, error) {
	full, st, err := d.check(name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return os.Open(full)
	}
	// Non-blocking, and checked again once open: what was vetted may have
	// been swapped for a named pipe since.
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err == nil {
		err = regular(st, true)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &cappedFile{File: f, name: name, total: d.total}, nil
}

func (d *dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	full, st, err := d.check(name)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	return os.ReadDir(full)
}

// check vets every step of name, the spec directory itself included,
// before anything is opened, and returns the path and what it leads to.
func (d *dirFS) check(name string) (string, fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return "", nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	root, err := d.root()
	if err != nil {
		return "", nil, err
	}
	steps := []string{"."}
	if name != "." {
		parts := strings.Split(name, "/")
		for i := range parts {
			steps = append(steps, path.Join(parts[:i+1]...))
		}
	}
	var st fs.FileInfo
	linked := false
	for i, s := range steps {
		var link bool
		if st, link, err = vet(filepath.Join(d.dir, filepath.FromSlash(s)), root.path, i == len(steps)-1); err != nil {
			return "", nil, err
		}
		linked = linked || link
	}
	full := filepath.Join(d.dir, filepath.FromSlash(name))
	if linked && !st.IsDir() && root.repo && d.tracked != nil {
		if err := d.committed(full); err != nil {
			return "", nil, err
		}
	}
	return full, st, nil
}

// vet refuses p when it is a link leading out of root or into a .git
// directory, or neither a directory nor (last) a regular file of at most
// MaxFileSize. It says whether p is a link.
func vet(p, root string, last bool) (fs.FileInfo, bool, error) {
	lst, err := os.Lstat(p)
	if err != nil {
		return nil, false, err
	}
	link := lst.Mode()&fs.ModeSymlink != 0
	if link {
		resolved, err := resolve(p)
		if err != nil {
			return nil, true, err
		}
		rel, err := filepath.Rel(root, resolved)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) ||
			slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), ".git") {
			return nil, true, OutsideLink()
		}
	}
	st, err := os.Stat(p)
	if err == nil {
		err = regular(st, last)
	}
	return st, link, err
}

// committed refuses a file reached through a link that git does not
// track: the work tree also holds what CI wrote there, credentials among
// it.
func (d *dirFS) committed(p string) error {
	resolved, err := resolve(p)
	if err != nil {
		return err
	}
	if !d.tracked(resolved) {
		return &Refused{
			Reason: "leads through a symbolic link to a file git does not track; rwc follows links to committed files only",
			Hint:   "git add the file it leads to, or replace the link with the file itself",
		}
	}
	return nil
}

func resolve(p string) (string, error) {
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	return filepath.Abs(resolved)
}

// regular refuses what is not a directory, or (last) a regular file of at
// most MaxFileSize.
func regular(st fs.FileInfo, last bool) error {
	switch m := st.Mode(); {
	case m.IsDir():
		return nil
	case !m.IsRegular() || !last:
		return &Refused{Reason: "is " + fileKind(m) + ", not a regular file", Hint: "a spec is a regular YAML file: remove this one or replace it with one"}
	case st.Size() > MaxFileSize:
		return TooLarge()
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return fmt.Sprintf("a special file (%s)", m.Type())
}

// OutsideLink refuses a link that leads out of the repository.
func OutsideLink() *Refused {
	return &Refused{
		Reason: "is a symbolic link to a path outside the repository; rwc reads no file outside it",
		Hint:   "replace the link with the file itself, or link to a file inside the repository",
	}
}

// TotalTooLarge refuses a file past MaxTotalSize of spec files in all.
func TotalTooLarge() *Refused {
	return &Refused{
		Reason: fmt.Sprintf("is past the %d MiB rwc reads of a spec directory's files in all", MaxTotalSize>>20),
		Hint:   "keep the spec directory to the pipelines and backfills",
	}
}

// TooLarge refuses a file past MaxFileSize.
func TooLarge() *Refused {
	return &Refused{
		Reason: fmt.Sprintf("is larger than %d MiB, the most rwc reads of a spec file", MaxFileSize>>20),
		Hint:   "a spec is a few kilobytes: split it into one pipeline per file, or check that this is the file you meant",
	}
}

// boundaryDir is the directory no spec path may lead out of, and whether
// it is a git work tree's root.
type boundaryDir struct {
	path string
	repo bool
}

// boundary is the git work tree holding dir (found by its .git, without
// following dir's own last link, which the repository may hold), else dir
// itself.
func boundary(dir string) (boundaryDir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return boundaryDir{}, err
	}
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			root, err := filepath.EvalSymlinks(p)
			return boundaryDir{root, true}, err
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	root, err := filepath.EvalSymlinks(abs)
	return boundaryDir{root, false}, err
}

// cappedFile stops a file that grows past what its size said, or past the
// directory's total, at the cap.
type cappedFile struct {
	*os.File
	name  string
	read  int64
	total *atomic.Int64
}

func (f *cappedFile) Read(b []byte) (int, error) {
	n, err := f.File.Read(b)
	f.read += int64(n)
	switch {
	case f.read > MaxFileSize:
		return n, TooLarge()
	case f.total.Add(int64(n)) > MaxTotalSize:
		return n, TotalTooLarge()
	}
	return n, err
}
