package run

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgres://u@h/db?password=secret", "postgres://u@h/db?password=xxxxx"},
		{"postgres://h/db?user=u&password=secret", "postgres://h/db?password=xxxxx&user=u"},
		{"postgres://u:se%zz@h/db", "postgres://xxxxx@h/db"},
		{"postgres://u:secret@h/db?x=%zz", "postgres://u:xxxxx@h/db?x=%zz"},
		{"host=h password=secret dbname=d", "host=h password=xxxxx dbname=d"},
		{"host=h password = secret dbname=d", "host=h password = xxxxx dbname=d"},
		{"host=h password='se cr\\'et' dbname=d", "host=h password=xxxxx dbname=d"},
		{"postgres://postgres@127.0.0.1:5432/rwc", "postgres://postgres@127.0.0.1:5432/rwc"},
	} {
		got := Redact(c.in)
		if got != c.want || strings.Contains(got, "secret") || strings.Contains(got, "se%zz") {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	msg := `parse "postgres://u:se%zz@h/db": invalid URL escape "%zz"`
	if got := RedactText(msg, "postgres://u:se%zz@h/db"); strings.Contains(got, "se%zz") {
		t.Errorf("RedactText left the password: %s", got)
	}
}
