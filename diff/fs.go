package diff

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/rwc-dev/rwc/spec"
)

// memFS is a read-only file system of a few small files: a spec directory
// as a git revision or a deployed snapshot holds it.
type memFS map[string]memEntry

// memEntry is a file's content, or why rwc will not read it (a
// *spec.Refused, which Load reports by the file's name).
type memEntry struct {
	data    []byte
	refused error
}

func (m memFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if e, ok := m[name]; ok {
		if e.refused != nil {
			return nil, e.refused
		}
		return &memFile{name: name, r: strings.NewReader(string(e.data)), size: int64(len(e.data))}, nil
	}
	var entries []fs.DirEntry
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	seen := map[string]bool{}
	for p := range m {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		rest := p[len(prefix):]
		child, _, isDir := strings.Cut(rest, "/")
		if !seen[child] {
			seen[child] = true
			entries = append(entries, dirEntry{name: child, dir: isDir})
		}
	}
	if len(entries) == 0 && name != "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return &memDir{name: name, entries: entries}, nil
}

// ReadDir lets fs.Glob list directories.
func (m memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := m.Open(name)
	if err != nil {
		return nil, err
	}
	d, ok := f.(*memDir)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	return d.entries, nil
}

type memFile struct {
	name string
	r    *strings.Reader
	size int64
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	return fileInfo{name: path.Base(f.name), size: f.size}, nil
}
func (f *memFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *memFile) Close() error               { return nil }

type memDir struct {
	name    string
	entries []fs.DirEntry
}

func (d *memDir) Stat() (fs.FileInfo, error) {
	return fileInfo{name: path.Base(d.name), dir: true}, nil
}
func (d *memDir) Read([]byte) (int, error) { return 0, io.EOF }
func (d *memDir) Close() error             { return nil }

type dirEntry struct {
	name string
	dir  bool
}

func (e dirEntry) Name() string               { return e.name }
func (e dirEntry) IsDir() bool                { return e.dir }
func (e dirEntry) Type() fs.FileMode          { return e.info().Mode().Type() }
func (e dirEntry) Info() (fs.FileInfo, error) { return e.info(), nil }
func (e dirEntry) info() fileInfo             { return fileInfo{name: e.name, dir: e.dir} }

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }

// Snapshot turns a deployed snapshot (display path → content, as `rwc apply`
// records it) back into the spec directory it was read from. The paths
// begin with the directory as apply was given it (pipelines, ./pipelines
// cleaned to pipelines, an absolute path, or nothing for "."), which need
// not be how the plan names it: the directory is the one that holds the
// pipeline files, the backfills' being one below it (a deployment always
// has a pipeline: apply refuses a backfill of a flow no pipeline defines).
func Snapshot(specs map[string]string) fs.FS {
	dir := ""
	for p := range specs {
		d := path.Dir(p)
		if dir == "" || len(d) < len(dir) {
			dir = d
		}
	}
	m := memFS{}
	for p, content := range specs {
		rel := p
		if dir != "." {
			var ok bool
			if rel, ok = strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/"); !ok {
				continue
			}
		}
		m[rel] = memEntry{data: []byte(content)}
	}
	return m
}

// AtRevision reads the spec directory dir as it is at rev (a commit, branch,
// tag or anything go-git resolves) in the repository containing dir, with
// no checkout. It returns the files and the resolved commit.
func AtRevision(dir, rev string) (fs.FS, string, error) {
	repo, rel, err := locate(dir)
	if err != nil {
		return nil, "", fmt.Errorf("--base %s: %s is not in a git repository: %v", rev, dir, err)
	}
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, "", fmt.Errorf("--base %s: %v (a shallow clone may lack it: fetch it, or plan against the deployed state)", rev, err)
	}
	commit, err := repo.CommitObject(*h)
	if err != nil {
		return nil, "", fmt.Errorf("--base %s: %v", rev, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, "", err
	}
	m := memFS{}
	var total int64 // what Load would read of a checkout, in all
	for _, d := range specDirs {
		entries, err := specEntries(tree, path.Join(rel, d))
		if err != nil {
			return nil, "", err
		}
		for _, e := range entries {
			entry := blobEntry(tree, path.Join(rel, d, e.Name))
			if total += int64(len(entry.data)); total > spec.MaxTotalSize {
				entry = memEntry{refused: spec.TotalTooLarge()}
			}
			m[path.Join(d, e.Name)] = entry
		}
	}
	return m, h.String(), nil
}

// blobEntry reads the spec file at p in tree as Load would read it in a
// checkout: a link is followed within the commit (never out of it), and a
// file past spec.MaxFileSize is refused before it is read.
func blobEntry(tree *object.Tree, p string) memEntry {
	for hops := 0; hops < 8; hops++ {
		f, err := tree.File(p)
		if err != nil {
			return memEntry{refused: err}
		}
		if f.Size > spec.MaxFileSize {
			return memEntry{refused: spec.TooLarge()}
		}
		content, err := f.Contents()
		if err != nil {
			return memEntry{refused: err}
		}
		if f.Mode != filemode.Symlink {
			return memEntry{data: []byte(content)}
		}
		if p = path.Join(path.Dir(p), content); path.IsAbs(content) || p == ".." || strings.HasPrefix(p, "../") {
			return memEntry{refused: spec.OutsideLink()}
		}
	}
	return memEntry{refused: errors.New("too many levels of symbolic links")}
}
