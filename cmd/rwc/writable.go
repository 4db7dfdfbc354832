package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rwc-dev/rwc/compile/databricks"
)

// writableInside refuses to write rel (a path below root: one that
// leads out of it lexically is refused too) when a step of
// it is a symbolic link that leads out of root, or nowhere (a dangling
// link, which writing would create wherever it points), or when it is
// there and is no regular file (a named pipe would block the read).
func writableInside(who, root, rel string) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("%s writes nothing: %s leads out of %s", who, rel, root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if os.IsNotExist(err) {
		return nil // MkdirAll creates root and all below it
	}
	if err != nil {
		return err
	}
	if realRoot, err = filepath.Abs(realRoot); err != nil {
		return err
	}
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	for i := range parts {
		p := filepath.Join(root, filepath.Join(parts[:i+1]...))
		st, err := os.Lstat(p)
		if os.IsNotExist(err) {
			return nil // nothing there, nor below: MkdirAll and WriteFile create it
		}
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err == nil {
				target, err = filepath.Abs(target)
			}
			if err != nil || !lexicallyWithin(realRoot, target) {
				return fmt.Errorf("%s writes nothing: %s is a symbolic link that leads outside %s (or nowhere), and %s writes no file through one: replace it with the directory or file itself", who, p, root, who)
			}
			if st, err = os.Stat(p); err != nil {
				return err
			}
		}
		if i == len(parts)-1 && !st.Mode().IsRegular() {
			return fmt.Errorf("%s writes nothing: %s is there and is not a regular file: move it aside", who, p)
		}
	}
	return nil
}

func lexicallyWithin(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

// writeFiles writes files (checked by writableInside first) under dir,
// saying each.
func writeFiles(w io.Writer, dir string, files []databricks.File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", p)
	}
	return nil
}
