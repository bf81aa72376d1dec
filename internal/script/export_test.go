package script

// TooOld is tooOld, for the tests of the version check.
var TooOld = tooOld
