package run

import "testing"

func TestCheckServerVersion(t *testing.T) {
	for _, c := range []struct {
		num int
		ok  bool
	}{{130012, false}, {90624, false}, {140000, true}, {150018, true}, {170002, true}} {
		err := checkServerVersion(c.num)
		if (err == nil) != c.ok {
			t.Errorf("checkServerVersion(%d) = %v, want ok %v", c.num, err, c.ok)
		}
	}
	if err := checkServerVersion(130012); err == nil || err.Error() != "the database runs PostgreSQL 13 (server_version_num 130012); rwc needs PostgreSQL 14 or newer (nothing was changed)" {
		t.Errorf("message: %v", err)
	}
}
