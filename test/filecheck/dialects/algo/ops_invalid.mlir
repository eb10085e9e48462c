// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// A send whose receiver expects another size: the error names the receiving step.
algo.algorithm @size_mismatch allreduce ranks 2 channels 1 chunksperloop 2 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 2 out 2 scratch 0 {
    algo.tb 0 send 1 recv 1 chan 0 {
      0: s i[0] -> _ x2
    }
  }
  algo.gpu 1 in 2 out 2 scratch 0 {
    // CHECK: :[[# @LINE + 1]]:5: error: 'algo.tb' op rank 1 tb 0 step 0 (rrc): receives 1 chunks but its send, rank 0 tb 0 step 0 (s), sends 2
    algo.tb 0 send 0 recv 0 chan 0 {
      0: rrc i[0] -> i[0] x1
    }
  }
}

// -----

// Both ranks receive before they send: each waits for the other forever.
algo.algorithm @deadlock allreduce ranks 2 channels 1 chunksperloop 1 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
    // CHECK: error: 'algo.tb' op rank 0 tb 0 step 0 (rrc): can never run (deadlock): it waits for rank 1 tb 0 step 1 (s) -> rank 1 tb 0 step 0 (rrc) -> rank 0 tb 0 step 1 (s) -> rank 0 tb 0 step 0 (rrc)
    algo.tb 0 send 1 recv 1 chan 0 {
      0: rrc i[0] -> i[0] x1
      1: s i[0] -> _ x1
    }
  }
  algo.gpu 1 in 1 out 1 scratch 0 {
    algo.tb 0 send 0 recv 0 chan 0 {
      0: rrc i[0] -> i[0] x1
      1: s i[0] -> _ x1
    }
  }
}

// -----

// A send nobody receives.
algo.algorithm @unmatched broadcast ranks 2 root 0 channels 1 chunksperloop 1 proto Simple outofplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
    // CHECK: error: 'algo.tb' op rank 0 tb 0 step 1 (s): sends to rank 1 on channel 0, but rank 1 receives only 1 of the 2 messages rank 0 sends it there
    algo.tb 0 send 1 recv -1 chan 0 {
      0: s i[0] -> _ x1
      1: s i[0] -> _ x1
    }
  }
  algo.gpu 1 in 1 out 1 scratch 0 {
    algo.tb 0 send -1 recv 0 chan 0 {
      0: r _ -> o[0] x1
    }
  }
}

// -----

// Two thread blocks that wait for each other.
algo.algorithm @cycle allreduce ranks 1 channels 1 chunksperloop 1 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
    // CHECK: error: 'algo.tb' op rank 0 tb 0 step 0 (nop): dependencies form a cycle: it waits for rank 0 tb 1 step 0 (nop) -> rank 0 tb 0 step 0 (nop)
    algo.tb 0 send -1 recv -1 chan 0 {
      0: nop _ -> _ x0 after 1.0
    }
    algo.tb 1 send -1 recv -1 chan 0 {
      0: nop _ -> _ x0 after 0.0
    }
  }
}

// -----

// A copy past the end of the output buffer.
algo.algorithm @bounds allgather ranks 1 channels 1 chunksperloop 1 proto Simple outofplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
    // CHECK: error: 'algo.tb' op rank 0 tb 0 step 0 (cpy): destination o[1] x1 is outside the buffer of 1 chunks
    algo.tb 0 send -1 recv -1 chan 0 {
      0: cpy i[0] -> o[1] x1
    }
  }
}

// -----

// A step that receives on a thread block without a receive peer.
algo.algorithm @no_peer allgather ranks 2 channels 1 chunksperloop 2 proto Simple outofplace bytes 0 to max {
  algo.gpu 0 in 1 out 2 scratch 0 {
    // CHECK: error: 'algo.tb' op rank 0 tb 0 step 0 (r): receives, but its thread block has no recv peer
    algo.tb 0 send 1 recv -1 chan 0 {
      0: r _ -> o[1] x1
    }
  }
  algo.gpu 1 in 1 out 2 scratch 0 {
  }
}

// -----

// Two thread blocks of a rank may not share a send peer on one channel.
algo.algorithm @shared_connection allgather ranks 2 channels 1 chunksperloop 2 proto Simple outofplace bytes 0 to max {
  algo.gpu 0 in 1 out 2 scratch 0 {
    algo.tb 0 send 1 recv -1 chan 0 {
    }
    // CHECK: error: 'algo.tb' op rank 0 tb 1: tb 0 already has send peer 1 on channel 0
    algo.tb 1 send 1 recv -1 chan 0 {
    }
  }
  algo.gpu 1 in 1 out 2 scratch 0 {
  }
}

// -----

algo.algorithm @bad_step allreduce ranks 1 channels 1 chunksperloop 1 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
    algo.tb 0 send -1 recv -1 chan 0 {
      // CHECK: :[[# @LINE + 1]]:7: error: expected a step: [N:] TYPE SRC -> DST xCOUNT [after TB.STEP], e.g. 'rrc i[3] -> i[3] x1'
      0: rrx i[0] -> i[0] x1
    }
  }
}

// -----

// CHECK: error: 'algo.algorithm' op unknown collective 'gather' (one of allreduce, reduce_scatter, allgather, alltoall, broadcast, reduce)
algo.algorithm @unknown gather ranks 1 channels 1 chunksperloop 1 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
  }
}

// -----

// A fused body (fn) runs once per output chunk: chunk 0 twice is refused where it repeats.
algo.algorithm @body_twice allreduce ranks 1 channels 1 chunksperloop 2 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 2 out 2 scratch 0 {
    // CHECK: :[[# @LINE + 1]]:5: error: 'algo.tb' op rank 0 tb 0 step 1 (fn): applies the body to output chunk 0 again (first at rank 0 tb 0 step 0 (fn))
    algo.tb 0 send -1 recv -1 chan 0 {
      0: fn o[0] -> i[0] x2
      1: fn o[0] -> i[0] x1
    }
  }
}

// -----

// Only an all-reduce's chunks have a completing step for a body to run at.
algo.algorithm @body_in_broadcast broadcast ranks 1 root 0 channels 1 chunksperloop 1 proto Simple outofplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
    // CHECK: :[[# @LINE + 1]]:5: error: 'algo.tb' op rank 0 tb 0 step 0 (fn): applies a fused body: only an allreduce may
    algo.tb 0 send -1 recv -1 chan 0 {
      0: fn o[0] -> o[0] x1
    }
  }
}

// -----

// A count past int64 (the fast reader of step lines converts columns to int64): the step's
// diagnostic, not an OverflowError.
algo.algorithm @huge_count allreduce ranks 2 channels 1 chunksperloop 1 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
    algo.tb 0 send 1 recv 1 chan 0 {
      // CHECK: :[[# @LINE + 1]]:7: error: a number of this step exceeds 2147483647
      0: s i[0] -> _ x99999999999999999999
    }
  }
}

// -----

// The header's rank count is the number of algo.gpu ops (it was read and dropped).
// CHECK: :[[# @LINE + 1]]:48: error: the algorithm says ranks 3 but holds 1 algo.gpu ops
algo.algorithm @ranks_disagree allreduce ranks 3 channels 1 chunksperloop 1 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
  }
}

// -----

// A root means something only to broadcast and reduce (it was printed away).
// CHECK: :[[# @LINE + 1]]:1: error: 'algo.algorithm' op allreduce has no root (only broadcast and reduce do)
algo.algorithm @rootless allreduce ranks 2 root 1 channels 1 chunksperloop 1 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
  }
  algo.gpu 1 in 1 out 1 scratch 0 {
  }
}

// -----

// The runtime cuts each loop's data into nchunksperloop chunks: it must be the largest buffer's
// chunk count, or steps address past the buffers (smaller) or leave data untouched (larger).
// CHECK: :[[# @LINE + 1]]:1: error: 'algo.algorithm' op nchunksperloop is 8 but the largest buffer holds 4 chunks
algo.algorithm @loop_too_long allreduce ranks 1 channels 1 chunksperloop 8 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 4 out 4 scratch 0 {
  }
}

// -----

// Channels past any runtime's (and past what the verifier's connection keys hold).
// CHECK: :[[# @LINE + 1]]:1: error: 'algo.algorithm' op nchannels 99999999999 is not between 1 and 65536
algo.algorithm @many_channels allreduce ranks 1 channels 99999999999 chunksperloop 1 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 1 out 1 scratch 0 {
  }
}
