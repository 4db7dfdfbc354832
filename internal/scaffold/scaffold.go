// Package scaffold is what rwc init writes into a repository: a sample
// pipeline, the CI workflow of docs/ci.md, the JSON Schemas editors read,
// and .rwc/ in .gitignore; and where a spec file finds those schemas.
package scaffold

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rwc-dev/rwc/internal/version"
	"github.com/rwc-dev/rwc/schemas"
)

// Example is the sample pipeline, pipelines/example.yaml; it lints clean.
//
//go:embed example.yaml
var Example []byte

// Workflow is docs/ci/github-actions.yml, copied (a test keeps the two
// equal): the recipe docs/ci.md explains.
//
//go:embed github-actions.yml
var Workflow []byte

// CommentWorkflow is docs/ci/github-actions-comment.yml, copied: the
// workflow that posts Workflow's plans as pull request comments.
//
//go:embed github-actions-comment.yml
var CommentWorkflow []byte

// rwcVersionLine is Workflow's line pinning the rwc release it downloads.
var rwcVersionLine = regexp.MustCompile(`(?m)^  RWC_VERSION: "[^"\n]*"`)

// releaseVersion is a release's version (0.4.0), not a build's
// (0.0.0-118dc86abcde, dev).
var releaseVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// WorkflowFor is Workflow pinned to the rwc release version: the rwc that
// writes it downloads itself in CI. A build that is no release (dev, a
// commit) leaves the recipe's pin as it is.
func WorkflowFor(version string) []byte {
	if !releaseVersion.MatchString(version) || version == "0.0.0" {
		return Workflow
	}
	return rwcVersionLine.ReplaceAll(Workflow, []byte(`  RWC_VERSION: "`+version+`"`))
}

// SchemaDir is where rwc init writes the JSON Schemas, in the repository:
// spec files reference them relatively, so editors find them offline, at
// the version of the rwc that wrote them.
const SchemaDir = ".rwc-schemas"

// File is one file rwc init writes, relative to the repository.
type File struct {
	Path    string
	Content []byte
}

// Files are the files rwc init writes into a repository whose spec
// directory is specDir (relative, default "pipelines"); the sample
// pipeline only when withExample.
func Files(specDir string, withExample bool) []File {
	return FilesFor(specDir, withExample, version.String())
}

// FilesFor is Files as the rwc of version writes them (WorkflowFor).
func FilesFor(specDir string, withExample bool, version string) []File {
	var out []File
	if withExample {
		ex := Example
		if ref := filepath.ToSlash(relTo(specDir, filepath.Join(SchemaDir, "pipeline.schema.json"))); ref != "../"+SchemaDir+"/pipeline.schema.json" {
			ex = bytes.Replace(ex, []byte("../"+SchemaDir+"/pipeline.schema.json"), []byte(ref), 1)
		}
		out = append(out, File{filepath.Join(specDir, "example.yaml"), ex})
	}
	out = append(out,
		File{filepath.Join(".github", "workflows", "rwc.yml"), WorkflowFor(version)},
		File{filepath.Join(".github", "workflows", "rwc-comment.yml"), CommentWorkflow},
		File{filepath.Join(SchemaDir, "pipeline.schema.json"), schemas.Pipeline},
		File{filepath.Join(SchemaDir, "backfill.schema.json"), schemas.Backfill},
	)
	return out
}

func relTo(fromDir, path string) string {
	r, err := filepath.Rel(fromDir, path)
	if err != nil {
		return path
	}
	return r
}

// GitignoreLine is what .gitignore needs: the local PostgreSQL's directory.
const GitignoreLine = ".rwc/"

// Gitignore returns .gitignore's content with .rwc/ ignored, and whether
// that changed it (a file that already ignores .rwc stays as it is).
func Gitignore(old []byte) ([]byte, bool) {
	for _, line := range strings.Split(string(old), "\n") {
		switch strings.TrimSpace(line) {
		case ".rwc", ".rwc/", "/.rwc", "/.rwc/":
			return old, false
		}
	}
	out := append([]byte{}, old...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, GitignoreLine+"\n"...), true
}

// SchemaRef is the reference, relative to the directory dir, of the JSON
// Schema name ("backfill.schema.json") that a spec file there can give
// editors: the first found going up from dir to the repository's root (a
// directory with .git) of SchemaDir/name (rwc init's) or schemas/name
// (rwc's own repository). "" when there is none: a reference to a file that
// does not exist only makes editors complain.
func SchemaRef(dir, name string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for d := abs; ; d = filepath.Dir(d) {
		for _, sub := range []string{SchemaDir, "schemas"} {
			cand := filepath.Join(d, sub, name)
			if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() {
				return filepath.ToSlash(relTo(abs, cand))
			}
		}
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil || filepath.Dir(d) == d {
			return ""
		}
	}
}

// Modeline is the yaml-language-server comment naming the schema ref.
func Modeline(ref string) string { return fmt.Sprintf("# yaml-language-server: $schema=%s\n", ref) }
