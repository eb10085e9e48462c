// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive memory=0.00006103515625}' --split-input-file | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=ilp memory=0.00006103515625}' --split-input-file | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=dp memory=0.00006103515625}' --split-input-file | filecheck %s --check-prefixes=CHECK,DP
// RUN: ccopt %s -p 'auto-shard{strategy=cd memory=0.00006103515625}' --split-input-file | filecheck %s
// RUN: ccopt-run %s --check-pipeline 'auto-shard{strategy=dp memory=0.00006103515625}' | filecheck %s --check-prefix=SAME
// RUN: ccopt-run %s --check-pipeline 'auto-shard{strategy=cd memory=0.00006103515625}' | filecheck %s --check-prefix=SAME

// The memory limit (64 KiB per device) bounds the peak over program points, not the sum of all
// values. Every value is 64x64 f32: 16 KiB replicated, 4 KiB split on tp=4. In this chain each
// value dies at its only use: at most x (an argument, live throughout), an op's operand and its
// result are live at once, 48 KiB replicated - so replication fits and moves nothing. The sum of
// the five values (80 KiB) would break the limit and force a slice and an all-gather (12290).
dtensor.mesh @t [tp=4]
// CHECK-LABEL: func.func @chain
// CHECK-SAME: %x: !dtensor.tensor<64x64xf32, @t[R]>
// CHECK-SAME: peak = 49152 : i64
// DP-SAME: note = "dp: the optimum without a memory limit fits it"
// CHECK-NEXT: dtensor.gelu %x : !dtensor.tensor<64x64xf32, @t[R]>
// CHECK-NEXT: dtensor.gelu %a : !dtensor.tensor<64x64xf32, @t[R]>
// CHECK-NEXT: dtensor.gelu %b : !dtensor.tensor<64x64xf32, @t[R]>
// CHECK-NEXT: dtensor.add %c, %x : {{.*}} -> !dtensor.tensor<64x64xf32, @t[R]>
// CHECK-NEXT: func.return
// SAME: result0 {{.*}} ok
func.func @chain(%x: !dtensor.tensor<64x64xf32, @t[?]>) -> !dtensor.tensor<64x64xf32, @t[R]> {
  %a = dtensor.gelu %x : !dtensor.tensor<64x64xf32, @t[?]>
  %b = dtensor.gelu %a : !dtensor.tensor<64x64xf32, @t[?]>
  %c = dtensor.gelu %b : !dtensor.tensor<64x64xf32, @t[?]>
  %d = dtensor.add %c, %x : (!dtensor.tensor<64x64xf32, @t[?]>, !dtensor.tensor<64x64xf32, @t[?]>) -> !dtensor.tensor<64x64xf32, @t[R]>
  func.return %d : !dtensor.tensor<64x64xf32, @t[R]>
}
