// Package keyslot computes Redis Cluster hash slots.
package keyslot

import "strings"

// Of returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key's hash tag, modulo 16384. It lets the pub/sub hub group shard channels
// by slot without a round trip.
func Of(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
