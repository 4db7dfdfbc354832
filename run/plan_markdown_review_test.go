package run_test

import (
	"regexp"
	"strings"
	"testing"
)

// The PR comment quotes the server's words about the author's query (a
// note: the output types could not be checked): none of the author's
// text there may write markdown of its own (a mention that notifies, a
// link, an image, HTML).
func TestPlanMarkdownNoteEscaped(t *testing.T) {
	rwcBinary(t)
	e := newDailyEnv(t)
	spec := strings.Replace(dailySpec, "SELECT d, k, v FROM ev", `SELECT d, k, "@rwc-dev/admins <img src=https://evil.example/p.png> [x](https://evil.example)" AS v FROM ev`, 1)
	_, out := runRWC(t, e.dsn, "plan", "--format", "markdown", writeSpecs(t, map[string]string{"p.yaml": spec}))
	unescaped := regexp.MustCompile(`(^|[^\\])(@rwc-dev|<img|\[x\])`)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "> **Note:**") && unescaped.MatchString(line) {
			t.Errorf("a note has the author's markdown unescaped:\n%s", line)
		}
	}
	if !strings.Contains(out, "> **Note:** could not check the query's output types") {
		t.Errorf("no note on the query's failure:\n%s", out)
	}
}
