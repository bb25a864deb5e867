package index

import "math"

// Quantised vectors for the graph walk. An HNSW search scores a few
// hundred vectors a query, and at 10,000 × 128 half of its time was memory
// stalls on the float vectors (512 bytes, eight cache lines each). A copy
// of each unit vector as int8 with one float scale (vec ≈ scale·q8, the
// scale being the largest magnitude over 127) is a quarter of the bytes;
// the walk scores the float query against it, and the ef nodes it keeps
// are re-scored with the float vectors before the k best are returned.

// quantize8 writes v as int8 into dst (len(v) long) and returns the scale
// that maps it back: v[i] ≈ scale·dst[i], each within scale/2. A zero
// vector gives zeros and scale 0.
func quantize8(dst []int8, v []float32) float32 {
	var amax float32
	for _, x := range v {
		amax = max(amax, float32(math.Abs(float64(x))))
	}
	if amax == 0 {
		clear(dst[:len(v)])
		return 0
	}
	inv := 127 / amax
	for i, x := range v {
		dst[i] = int8(max(-127, min(127, math.Round(float64(x*inv)))))
	}
	return amax / 127
}

// dotBatchQ8 sets out[i] to scales[ids[i]] times the dot product of q and
// the int8 vector of node ids[i], base[ids[i]·len(q) : (ids[i]+1)·len(q)].
// out must be as long as ids; every id must name a whole vector in base
// and a scale (it panics otherwise, before reading any). The assembly
// kernel needs len(q) a multiple of 16; other lengths take the Go loop.
func dotBatchQ8(q []float32, base []int8, ids []uint32, scales, out []float32) {
	if len(ids) == 0 {
		return
	}
	out = out[:len(ids)]
	limit := uint32(min(len(base)/len(q), len(scales)))
	for _, id := range ids {
		if id >= limit {
			panic("index: dotBatchQ8 id outside the vector slab")
		}
	}
	if hasQ8Kernel() && len(q)%16 == 0 {
		dotBatchQ8Asm(q, base, ids, scales, out)
		return
	}
	dotBatchQ8Go(q, base, ids, scales, out)
}

// dotBatchQ8Go is dotBatchQ8's portable path.
func dotBatchQ8Go(q []float32, base []int8, ids []uint32, scales, out []float32) {
	dim := len(q)
	for i, id := range ids {
		v := base[int(id)*dim : (int(id)+1)*dim]
		var s float32
		for j, x := range v {
			s += q[j] * float32(x)
		}
		out[i] = s * scales[id]
	}
}
