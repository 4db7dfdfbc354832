package spec

import (
	"errors"
	"fmt"
	"io"
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
// spec path must not be: a symbolic link (the spec directory's own path
// included) leading out of the repository, into a .git directory, or to a
// file whose content git does not hold, such as credentials CI wrote into
// the work tree; anything but a directory or a regular file; a file over
// MaxFileSize, and more than MaxTotalSize in all. The repository is repo
// (the one the command runs in); without one, the git work tree found
// above dir, else dir itself.
func DirFS(dir string, repo Repo) fs.FS {
	d := &dirFS{dir: dir, repo: repo, total: new(atomic.Int64)}
	d.root = sync.OnceValues(func() (string, error) {
		if abs, err := filepath.Abs(dir); err == nil && repo.Root != "" && lexicallyInside(repo.Root, abs) {
			return repo.Root, nil
		}
		// A directory named outside the repository rwc runs in is the
		// command line's choice: its own repository bounds it.
		d.repo = Repo{}
		return boundary(dir)
	})
	return d
}

// lexicallyInside reports whether p, as written, is root or below it.
func lexicallyInside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Repo is the git repository rwc runs in, found from the working directory
// (which the pull request cannot move, unlike a path inside the checkout);
// the zero Repo when there is none.
type Repo struct {
	Root string // the work tree's root, links resolved
	// Committed reports whether git's index holds the file at an absolute
	// path with exactly this content.
	Committed func(abs string, content []byte) bool
}

type dirFS struct {
	dir   string
	root  func() (string, error)
	repo  Repo
	total *atomic.Int64
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
	if d.repo.Root != "" {
		// A link above the spec directory, inside the checkout, could
		// lead it anywhere: the directory itself must be in the repository.
		rd, err := resolve(d.dir)
		if err != nil {
			return "", nil, err
		}
		if !inside(root, rd) {
			return "", nil, &Refused{
				Reason: "leads outside the repository through a symbolic link on its path; rwc reads no file outside it",
				Hint:   "name the spec directory where it really is, or replace the link on its path with the directory itself",
			}
		}
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
		if st, link, err = vet(filepath.Join(d.dir, filepath.FromSlash(s)), root, i == len(steps)-1); err != nil {
			return "", nil, err
		}
		linked = linked || link
	}
	full := filepath.Join(d.dir, filepath.FromSlash(name))
	if linked && !st.IsDir() && d.repo.Committed != nil {
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
		if !inside(root, resolved) {
			return nil, true, OutsideLink()
		}
	}
	st, err := os.Stat(p)
	if err == nil {
		err = regular(st, last)
	}
	return st, link, err
}

// inside reports whether p is root or below it, and not in a .git
// directory.
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && lexicallyInside(root, p) && !slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), ".git")
}

// committed refuses a file reached through a link unless git's index holds
// it as it is: the work tree also holds what CI wrote there, credentials
// among it, at paths a pull request may have committed placeholders for.
func (d *dirFS) committed(p string) error {
	resolved, err := resolve(p)
	if err != nil {
		return err
	}
	content, err := ReadCapped(resolved)
	if err != nil {
		return err
	}
	if !d.repo.Committed(resolved, content) {
		return &Refused{
			Reason: "leads through a symbolic link to a file whose content git does not hold; rwc follows links to committed files only",
			Hint:   "git add (and commit) the file it leads to as it is, or replace the link with the file itself",
		}
	}
	return nil
}

// ReadCapped reads at most MaxFileSize+1 bytes of a regular file, checked
// once it is open, without blocking on anything else (a *Refused when it is
// no regular file or too large).
func ReadCapped(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err == nil {
		err = regular(st, true)
	}
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
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

// boundary is the directory no spec path may lead out of when rwc knows
// no repository: the git work tree holding dir (found by its .git, without
// following dir's own last link, which the repository may hold), else dir
// itself.
func boundary(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			return filepath.EvalSymlinks(p)
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	return filepath.EvalSymlinks(abs)
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
