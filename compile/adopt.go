package compile

import "fmt"

// Adoption is what a refresh does with a target table that exists before
// it writes: refresh it (rwc made it), adopt it (Adopt: a table Citus
// built in the place of rwc's, which the refresh verifies by its rows
// before it writes, see run's adoptRecreated), or refuse it (Refusal, in
// rwc apply's words; nothing changes). Adopting a table rwc did not make
// would let a refresh delete rows nobody asked rwc to manage.
type Adoption struct {
	Adopt   bool
	Refusal string
}

// TargetAdoption decides it from the flow's row in rwc.flows (st) and the
// table the target's name holds now (obs.TargetOID, 0: none).
func (f *Flow) TargetAdoption(st FlowState, obs Observation) Adoption {
	switch {
	case obs.TargetOID == 0 || st.Found && obs.TargetOID == st.TargetOID:
		return Adoption{}
	case !st.Found:
		return Adoption{Refusal: fmt.Sprintf("table %s already exists and was not created by rwc (%s): rwc refuses to adopt it; drop or rename it, or choose another table name (if rwc created it and lost the flow's row in rwc.flows, rwc state check says so, and rwc state repair re-adopts it)",
			f.Target(), f.Table.Pos)}
	case obs.Citus && st.TargetGone:
		// alter_distributed_table and undistribute_table build a new
		// table under the name, copy the rows and drop the old one.
		return Adoption{Adopt: true}
	}
	return Adoption{Refusal: fmt.Sprintf("table %s was dropped and created again outside rwc (%s): rwc refuses to adopt the new table; drop it and rwc will create and fill it",
		f.Target(), f.Table.Pos)}
}
