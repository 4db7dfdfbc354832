package diff

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/go-git/go-git/v5"
)

// The specs a command runs must be a commit's: Refusal says why not, and
// what to do, in each case there is none.
func TestCheckoutRefusal(t *testing.T) {
	outside := t.TempDir()
	empty := t.TempDir()
	if _, err := git.PlainInit(empty, false); err != nil {
		t.Fatal(err)
	}
	clean, _ := newRepo(t)
	dirty, _ := newRepo(t)
	write("pipelines/p.yaml", "pipeline: q\n")(t, dirty)
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"outside git", outside, `^x is not in a git repository, so there is no commit to deploy; nothing was changed: .*--allow-dirty`},
		{"no commits yet", empty, `^x is in a git repository without commits, so there is no commit to deploy; nothing was changed: commit the specs, or pass --allow-dirty`},
		{"dirty", filepath.Join(dirty, "pipelines"), `^x has uncommitted changes to its specs: .*--allow-dirty$`},
		{"clean", filepath.Join(clean, "pipelines"), ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			co := ReadCheckout(tc.dir)
			if co.Err != nil {
				t.Fatal(co.Err)
			}
			err := co.Refusal("x")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Refusal = %v, want none", err)
			case tc.want != "" && (err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error())):
				t.Errorf("Refusal = %v, want %s", err, tc.want)
			}
		})
	}
}
