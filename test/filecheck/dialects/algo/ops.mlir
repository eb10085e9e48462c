// RUN: ccopt %s | filecheck %s
// RUN: ccopt %s --print-op-generic | ccopt | filecheck %s
// RUN: ccopt %s -t 'msccl-xml{algorithm=every_step}' | ccopt -f msccl-xml | filecheck %s --check-prefix=XML

// A 2-rank ring all-reduce in MSCCL's fused steps: one send, a receive-reduce-copy-send that
// finishes the reduction and starts the gather, a final receive.
// CHECK-LABEL: algo.algorithm @ring2 allreduce ranks 2 channels 1 chunksperloop 2 proto Simple inplace bytes 0 to max {
// CHECK-NEXT:    algo.gpu 0 in 2 out 2 scratch 0 {
// CHECK-NEXT:      algo.tb 0 send 1 recv 1 chan 0 {
// CHECK-NEXT:        0: s i[1] -> _ x1
// CHECK-NEXT:        1: rrcs i[0] -> i[0] x1
// CHECK-NEXT:        2: r _ -> i[1] x1
// CHECK-NEXT:      }
// CHECK-NEXT:    }
algo.algorithm @ring2 allreduce ranks 2 channels 1 chunksperloop 2 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 2 out 2 scratch 0 {
    algo.tb 0 send 1 recv 1 chan 0 {
      0: s i[1] -> _ x1
      1: rrcs i[0] -> i[0] x1
      2: r _ -> i[1] x1
    }
  }
  algo.gpu 1 in 2 out 2 scratch 0 {
    algo.tb 0 send 0 recv 0 chan 0 {
      s i[0] -> _ x1
      rrcs i[1] -> i[1] x1   // step numbers are optional
      r _ -> i[0] x1
    }
  }
}

// Every step type, scratch, a local thread block and cross-block dependencies: rank 1 receives
// into scratch on one thread block and a local one adds it in after the receive (`after 0.1`).
// CHECK-LABEL: algo.algorithm @every_step reduce_scatter ranks 2 channels 2 chunksperloop 4 proto LL128 outofplace bytes 1024 to 65536 {
// CHECK:       algo.gpu 1 in 4 out 2 scratch 2 {
// CHECK:         algo.tb 1 send -1 recv -1 chan 0 {
// CHECK-NEXT:      0: cpy i[2] -> o[0] x2
// CHECK-NEXT:      1: re s[0] -> o[0] x2 after 0.1
// CHECK-NEXT:      2: nop _ -> _ x0 after 0.0
// CHECK-NEXT:    }
// Through MSCCL XML and back, the same algorithm:
// XML-LABEL: algo.algorithm @every_step reduce_scatter ranks 2 channels 2 chunksperloop 4 proto LL128 outofplace bytes 1024 to 65536 {
// XML:         algo.gpu 1 in 4 out 2 scratch 2 {
// XML:           algo.tb 1 send -1 recv -1 chan 0 {
// XML-NEXT:        0: cpy i[2] -> o[0] x2
// XML-NEXT:        1: re s[0] -> o[0] x2 after 0.1
// XML-NEXT:        2: nop _ -> _ x0 after 0.0
algo.algorithm @every_step reduce_scatter ranks 2 channels 2 chunksperloop 4 proto LL128 outofplace bytes 1024 to 65536 {
  algo.gpu 0 in 4 out 2 scratch 2 {
    algo.tb 0 send 1 recv 1 chan 0 {
      0: s i[2] -> _ x2
      1: r _ -> s[0] x2
    }
    algo.tb 1 send -1 recv -1 chan 0 {
      0: cpy i[0] -> o[0] x2
      1: re s[0] -> o[0] x2 after 0.1
    }
  }
  algo.gpu 1 in 4 out 2 scratch 2 {
    algo.tb 0 send 0 recv 0 chan 0 {
      0: s i[0] -> _ x2
      1: r _ -> s[0] x2
    }
    algo.tb 1 send -1 recv -1 chan 0 {
      0: cpy i[2] -> o[0] x2
      1: re s[0] -> o[0] x2 after 0.1
      2: nop _ -> _ x0 after 0.0
    }
  }
}
