package run

import (
	"fmt"
	"testing"

	"github.com/lib/pq"
)

// A server error no step put in rwc's words reads as the server's message
// and SQLSTATE, never as the driver's "pq: …", and says what the refresh
// left; one that says so already is left as it is.
func TestInServerWords(t *testing.T) {
	pe := &pq.Error{Message: "must be owner of table t", Code: "42501"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("flow x: creating a partition: %w", pe),
			"flow x: creating a partition: the server refused it: must be owner of table t (SQLSTATE 42501); " + unchanged},
		{pe, "the server refused it: must be owner of table t (SQLSTATE 42501); " + unchanged},
		{fmt.Errorf("flow x: %w; the refresh was rolled back, and so on", pe),
			"flow x: the server refused it: must be owner of table t (SQLSTATE 42501); the refresh was rolled back, and so on"},
		{fmt.Errorf("flow x: worded already"), "flow x: worded already"},
	} {
		if got := inServerWords(c.err, unchanged).Error(); got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.err, got, c.want)
		}
	}
}
