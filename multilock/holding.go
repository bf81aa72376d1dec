package multilock

import "reflect"

// holding is one continuous hold of a group, from the Lock that took its
// first level to the Unlock of its last. Its watcher goroutine turns the
// members' Done channels into the group's: it runs only while the group
// holds, its owner stops it with end, which waits for it to return.
type holding struct {
	done   chan struct{} // closed when the hold ends, released or lost
	stop   chan struct{} // closed by end
	exited chan struct{} // closed when the watcher has returned
}

// watchHold starts watching a hold over the members whose Done channels
// are dones: it is lost when fewer than need of them remain open.
func watchHold(dones []<-chan struct{}, need int) *holding {
	h := &holding{done: make(chan struct{}), stop: make(chan struct{}), exited: make(chan struct{})}
	go h.watch(dones, need)
	return h
}

// watch waits on every member's Done at once; a group's members are many
// and chosen at run time, hence reflect.Select rather than a select
// statement or a goroutine per member.
func (h *holding) watch(dones []<-chan struct{}, need int) {
	defer close(h.exited)
	defer close(h.done)
	cases := make([]reflect.SelectCase, 1, len(dones)+1)
	cases[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(h.stop)}
	for _, d := range dones {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(d)})
	}
	for open := len(dones); open >= need; open-- {
		i, _, _ := reflect.Select(cases)
		if i == 0 {
			return
		}
		cases[i].Chan = reflect.Value{} // a zero Chan is never chosen again
	}
}

// end ends the hold (Done closes, if a loss did not close it already) and
// waits for the watcher to return.
func (h *holding) end() {
	close(h.stop)
	<-h.exited
}
