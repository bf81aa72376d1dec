package main

import (
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// dataStats is what the resource's log says about the data.
type dataStats struct {
	readsOK, readsRefused   int
	writesOK, writesRefused int
	// staleAccepted counts operations the resource accepted although
	// their token was below the highest it had accepted (or equal to
	// another client's): the checker replays the log with rules of its
	// own, so a resource that let one through would show here.
	staleAccepted int
	// lostUpdates counts accepted writes that did not build on the
	// register's value: another write came between the writer's read and
	// its write, and one increment was lost.
	lostUpdates int
	maxInside   int // most holders inside the counted resource at once
	// overCapacity counts entries into the counted resource that found
	// all its permits' holders inside already.
	overCapacity int
}

// dataViolations are the stale writes the resource accepted: lost updates
// of the register, fenced operations accepted with a stale token, entries
// into the counted resource above its capacity.
func (d dataStats) dataViolations() int { return d.staleAccepted + d.lostUpdates + d.overCapacity }

// replay checks the resource's log.
func replay(log []resEntry, permits int) dataStats {
	var d dataStats
	hi, hiBy := map[int]uint64{}, map[int]string{}
	for _, e := range log {
		switch e.Op {
		case "R", "W":
			d.replayRW(e, hi, hiBy)
		case "E":
			d.maxInside = max(d.maxInside, e.Inside)
			if e.Inside > permits {
				d.overCapacity++
			}
		}
	}
	return d
}

func (d *dataStats) replayRW(e resEntry, hi map[int]uint64, hiBy map[int]string) {
	counts := map[[2]bool]*int{
		{true, true}: &d.readsOK, {true, false}: &d.readsRefused,
		{false, true}: &d.writesOK, {false, false}: &d.writesRefused,
	}
	*counts[[2]bool{e.Op == "R", e.OK}]++
	if !e.OK {
		return
	}
	t, _ := parseTokens(e.Tok)
	stale := false
	for s, v := range t {
		if v < hi[s] || (v == hi[s] && hiBy[s] != e.Who) {
			stale = true
		}
		if v >= hi[s] {
			hi[s], hiBy[s] = v, e.Who
		}
	}
	if stale {
		d.staleAccepted++
	}
	if e.Op == "W" && e.Val != e.Prev+1 {
		d.lostUpdates++
	}
}

// An rmw is one client's use of the register inside one hold, as the
// client saw it: a read of r, and, when write is set, the write of r+1.
// unknown marks a write whose outcome the client never learned.
type rmw struct {
	r       int64
	write   bool
	unknown bool
}

// registerModel is the register as a counter that clients increment by
// reading and writing back: an increment from r can only happen while the
// register holds r. Two holders that both read r and both had their
// write of r+1 accepted cannot be linearized: a lost update.
var registerModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{int64(0)} },
	Step: func(state, input, _ interface{}) []interface{} {
		s, op := state.(int64), input.(rmw)
		switch {
		case s != op.r:
			return nil
		case !op.write:
			return []interface{}{s}
		case op.unknown:
			return []interface{}{s, s + 1}
		}
		return []interface{}{s + 1}
	},
}

// rmwOps turns the clients' histories (each instance's events in order)
// into the operations registerModel checks: a refused write leaves only its
// read, a write with an unknown outcome stays open to the end of time.
func rmwOps(histories [][]event) []porcupine.Operation {
	var ops []porcupine.Operation
	for _, evs := range histories {
		var u rmwUse
		for _, e := range evs {
			ops = u.step(e, ops)
		}
		ops = u.flush(ops)
	}
	return ops
}

// rmwUse follows one instance's use of the register.
type rmwUse struct {
	state         int // 0 idle, 1 reading, 2 read, 3 writing
	client        int
	call, readRet int64
	r             int64
}

func (u *rmwUse) step(e event, ops []porcupine.Operation) []porcupine.Operation {
	switch {
	case e.Op == opRead && e.Type == typeInvoke:
		ops = u.flush(ops)
		*u = rmwUse{state: 1, client: e.Client, call: e.T}
	case e.Op == opRead && u.state == 1 && e.Type == typeOK:
		u.state, u.r, u.readRet = 2, e.Val, e.T
	case e.Op == opRead && u.state == 1:
		u.state = 0 // a read refused or lost changed nothing
	case e.Op == opWrite && e.Type == typeInvoke && u.state == 2:
		u.state = 3
	case e.Op == opWrite && u.state == 3:
		u.state = 0
		switch e.Type {
		case typeOK:
			ops = append(ops, u.op(rmw{r: u.r, write: true}, e.T))
		case typeFail:
			ops = append(ops, u.op(rmw{r: u.r}, u.readRet))
		default:
			ops = append(ops, u.op(rmw{r: u.r, write: true, unknown: true}, math.MaxInt64))
		}
	}
	return ops
}

// flush ends a use cut short: by the next read, the end of the history or
// the death of the process.
func (u *rmwUse) flush(ops []porcupine.Operation) []porcupine.Operation {
	switch u.state {
	case 2:
		ops = append(ops, u.op(rmw{r: u.r}, u.readRet))
	case 3:
		ops = append(ops, u.op(rmw{r: u.r, write: true, unknown: true}, math.MaxInt64))
	}
	u.state = 0
	return ops
}

func (u *rmwUse) op(in rmw, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: u.client, Input: in, Call: u.call, Return: ret}
}

// linearizable checks the register with porcupine within timeout: "yes",
// "NO" or "unknown" (the search ran out of time).
func linearizable(ops []porcupine.Operation, timeout time.Duration) string {
	switch porcupine.CheckOperationsTimeout(registerModel.ToModel(), ops, timeout) {
	case porcupine.Ok:
		return "yes"
	case porcupine.Illegal:
		return "NO"
	}
	return "unknown"
}
