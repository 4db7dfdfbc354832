// Package diff reads specs at git revisions and classifies what changed.
package diff

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/rwc-dev/rwc/spec"
)

// Head returns the commit checked out in the git work tree containing dir,
// and whether the spec files in dir differ from that commit's: the files
// spec.Load reads (*.yaml, and backfills/*.yaml), added, removed or
// changed, whether git tracks, ignores or has not yet seen them. A spec
// file that is a symbolic link differs when the link does, or when the file
// it points to differs from the commit's (or lies outside the work tree).
// Other files, in dir or elsewhere in the repository, do not make a
// deployment's specs differ from the commit, and are not read: a status of
// the whole work tree costs about 30 ms per thousand files (0.6 s in a
// repository of 20,000). When the commit is known but the comparison
// fails, Head says dirty, with the error. Outside a git work tree it
// returns "" and no error.
func Head(dir string) (commit string, dirty bool, err error) {
	repo, root, err := open(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	ref, err := repo.Head()
	if err != nil {
		return "", false, nil // a repository without commits yet
	}
	commit = ref.Hash().String()
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return commit, true, err
	}
	tree, err := c.Tree()
	if err != nil {
		return commit, true, err
	}
	same, err := specsCommitted(tree, root, dir)
	return commit, !same || err != nil, err
}

// locate opens the repository whose work tree holds dir, and says where dir
// is in it (slash-separated, "." for the root).
func locate(dir string) (*git.Repository, string, error) {
	repo, root, err := open(dir)
	if err != nil {
		return nil, "", err
	}
	rel, err := within(root, dir)
	if err != nil {
		return nil, "", err
	}
	return repo, rel, nil
}

// open opens the repository whose work tree holds dir, and returns the
// work tree's root with symbolic links resolved.
func open(dir string) (*git.Repository, string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, "", err
	}
	root, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return nil, "", err
	}
	return repo, root, nil
}

// errOutside is a path outside the work tree.
var errOutside = errors.New("outside the git work tree")

// within says where the existing path p is in the work tree at root, with
// symbolic links on the way resolved (slash-separated, "." for the root).
func within(root, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w", p, errOutside)
	}
	return filepath.ToSlash(rel), nil
}

// isSpecFile matches the names spec.Load reads in a directory.
func isSpecFile(name string) bool {
	ok, _ := path.Match("*.yaml", name)
	return ok
}

// specDirs are the directories, relative to the spec directory, whose
// spec files spec.Load reads.
var specDirs = []string{".", spec.BackfillDir}

// specsCommitted reports whether the spec files in dir (in the work tree
// at root) are the ones tree holds, byte for byte. Each spec directory is
// compared where it really is: a symbolic link to a directory is followed,
// and the commit's files are looked up at the path it leads to.
func specsCommitted(tree *object.Tree, root, dir string) (bool, error) {
	for _, d := range specDirs {
		onDisk := filepath.Join(dir, d)
		entries, err := readDir(onDisk)
		if err != nil {
			return false, err
		}
		var committed []object.TreeEntry
		if entries != nil {
			rel, err := within(root, onDisk)
			if errors.Is(err, errOutside) {
				if hasSpecs(entries) {
					return false, nil // specs the repository cannot hold
				}
				continue
			}
			if err != nil {
				return false, err
			}
			if committed, err = specEntries(tree, rel); err != nil {
				return false, err
			}
		} else if rel, err := within(root, dir); err == nil {
			// The directory is gone: the commit must not have specs there.
			if committed, err = specEntries(tree, path.Join(rel, d)); err != nil {
				return false, err
			}
		}
		same, err := sameSpecs(tree, root, onDisk, entries, committed)
		if err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// readDir lists a directory as spec.Load sees it: nothing when there is
// no directory at p (not even a file of that name).
func readDir(p string) ([]fs.DirEntry, error) {
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !st.IsDir() {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return os.ReadDir(p)
}

func hasSpecs(entries []fs.DirEntry) bool {
	for _, e := range entries {
		if !e.IsDir() && isSpecFile(e.Name()) {
			return true
		}
	}
	return false
}

// specEntries lists the spec files of the directory rel in tree (none when
// the commit has no such directory).
func specEntries(tree *object.Tree, rel string) ([]object.TreeEntry, error) {
	t := tree
	if rel != "." {
		var err error
		if t, err = tree.Tree(rel); errors.Is(err, object.ErrDirectoryNotFound) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
	}
	var out []object.TreeEntry
	for _, e := range t.Entries {
		if e.Mode.IsFile() && isSpecFile(e.Name) {
			out = append(out, e)
		}
	}
	return out, nil
}

// sameSpecs compares the spec files of one directory on disk with the
// commit's entries for it.
func sameSpecs(tree *object.Tree, root, dir string, entries []fs.DirEntry, committed []object.TreeEntry) (bool, error) {
	want := map[string]object.TreeEntry{}
	for _, e := range committed {
		want[e.Name] = e
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !isSpecFile(e.Name()) {
			continue
		}
		n++
		c, ok := want[e.Name()]
		if !ok {
			return false, nil
		}
		p := filepath.Join(dir, e.Name())
		if e.Type()&fs.ModeSymlink == 0 {
			if same, err := sameBlob(p, c.Hash); err != nil || !same {
				return false, err
			}
			continue
		}
		// git stores a link as the path it holds; spec.Load reads the file
		// it leads to, which must be the commit's too.
		target, err := os.Readlink(p)
		if err != nil {
			return false, err
		}
		if c.Mode != filemode.Symlink || plumbing.ComputeHash(plumbing.BlobObject, []byte(filepath.ToSlash(target))) != c.Hash {
			return false, nil
		}
		rel, err := within(root, p)
		if errors.Is(err, errOutside) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		f, err := tree.FindEntry(rel)
		if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if same, err := sameBlob(p, f.Hash); err != nil || !same {
			return false, err
		}
	}
	return n == len(committed), nil
}

// sameBlob reports whether the file at p (links followed) holds the blob
// h. What spec.Load refuses to read (a named pipe, a device, a file past
// its cap) is read no more here: it cannot be a committed spec.
func sameBlob(p string, h plumbing.Hash) (bool, error) {
	content, err := spec.ReadCapped(p)
	var refused *spec.Refused
	if errors.As(err, &refused) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return plumbing.ComputeHash(plumbing.BlobObject, content) == h, nil
}

// Repo is the repository the work tree at dir (rwc's working directory)
// belongs to, as spec.DirFS needs it: its root, and whether its index holds
// a file with a given content. The index is read on the first question
// only (most spec directories have no links). Outside a repository it is
// the zero spec.Repo.
func Repo(dir string) spec.Repo {
	repo, root, err := open(dir)
	if err != nil {
		return spec.Repo{}
	}
	index := sync.OnceValue(func() map[string]plumbing.Hash {
		idx, err := repo.Storer.Index()
		if err != nil {
			return nil
		}
		blobs := make(map[string]plumbing.Hash, len(idx.Entries))
		for _, e := range idx.Entries {
			blobs[e.Name] = e.Hash
		}
		return blobs
	})
	return spec.Repo{Root: root, Committed: func(abs string, content []byte) bool {
		rel, err := within(root, abs)
		h, ok := index()[rel]
		return err == nil && ok && h == plumbing.ComputeHash(plumbing.BlobObject, content)
	}}
}
