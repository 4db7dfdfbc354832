// Package diff reads specs at git revisions and classifies what changed.
package diff

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/rwc-dev/rwc/spec"
)

// Head returns the commit checked out in the git work tree containing dir,
// and whether the spec files in dir differ from that commit's: the files
// spec.Load reads (*.yaml, and backfills/*.yaml), added, removed or
// changed, whether git tracks, ignores or has not yet seen them. Other
// files, in dir or elsewhere in the repository, do not make a deployment's
// specs differ from the commit, and are not read: a status of the whole
// work tree costs about 30 ms per thousand files (0.6 s in a repository of
// 20,000). Outside a git work tree it returns "" and no error.
func Head(dir string) (commit string, dirty bool, err error) {
	repo, rel, err := locate(dir)
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
		return commit, false, err
	}
	tree, err := c.Tree()
	if err != nil {
		return commit, false, err
	}
	committed, err := committedSpecs(tree, rel)
	if err != nil {
		return commit, false, err
	}
	onDisk, err := specsOnDisk(dir)
	if err != nil {
		return commit, false, err
	}
	if len(committed) != len(onDisk) {
		return commit, true, nil
	}
	for name, h := range onDisk {
		if committed[name] != h {
			return commit, true, nil
		}
	}
	return commit, false, nil
}

// locate opens the repository whose work tree holds dir, and says where dir
// is in it (slash-separated, "." for the root).
func locate(dir string) (*git.Repository, string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	root := wt.Filesystem.Root()
	// The same directory by another path (a symbolic link on the way, as
	// /tmp is on some systems) is still inside the work tree.
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if a, err := filepath.EvalSymlinks(abs); err == nil {
		abs = a
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, "", err
	}
	return repo, filepath.ToSlash(rel), nil
}

// isSpecFile matches the names spec.Load reads in a directory.
func isSpecFile(name string) bool {
	ok, _ := path.Match("*.yaml", name)
	return ok
}

// specDirs are the directories, relative to the spec directory, whose
// spec files spec.Load reads.
var specDirs = []string{".", spec.BackfillDir}

// committedSpecs maps each spec file under rel in tree to its blob.
func committedSpecs(tree *object.Tree, rel string) (map[string]plumbing.Hash, error) {
	out := map[string]plumbing.Hash{}
	for _, d := range specDirs {
		t, err := subtree(tree, path.Join(rel, d))
		if errors.Is(err, object.ErrDirectoryNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range t.Entries {
			if e.Mode.IsFile() && isSpecFile(e.Name) {
				out[path.Join(d, e.Name)] = e.Hash
			}
		}
	}
	return out, nil
}

func subtree(tree *object.Tree, p string) (*object.Tree, error) {
	if p == "." {
		return tree, nil
	}
	return tree.Tree(p)
}

// specsOnDisk maps each spec file in dir to the blob git would store for
// it: its content, or for a symbolic link the path it points to.
func specsOnDisk(dir string) (map[string]plumbing.Hash, error) {
	out := map[string]plumbing.Hash{}
	for _, d := range specDirs {
		entries, err := os.ReadDir(filepath.Join(dir, d))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() || !isSpecFile(e.Name()) {
				continue
			}
			p := filepath.Join(dir, d, e.Name())
			var content []byte
			if e.Type()&fs.ModeSymlink != 0 {
				target, err := os.Readlink(p)
				if err != nil {
					return nil, err
				}
				content = []byte(filepath.ToSlash(target))
			} else if content, err = os.ReadFile(p); err != nil {
				return nil, err
			}
			out[path.Join(d, e.Name())] = plumbing.ComputeHash(plumbing.BlobObject, content)
		}
	}
	return out, nil
}
