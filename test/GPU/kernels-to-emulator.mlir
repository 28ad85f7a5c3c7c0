// rewire-kernels-to-emulator: GPU kernels become host functions that call
// the CUDA emulator for ids, barriers and shuffles; the host code goes.
// RUN: rewire-opt %s --split-input-file --verify-diagnostics --rewire-kernels-to-emulator | FileCheck %s

// CHECK-LABEL: memref.global "private" @reduce_shared0 : memref<32xf32>
// CHECK-NOT: func.func @host
// CHECK-LABEL: func.func @reduce(%{{.*}}: memref<64xf32>)
// CHECK: %[[SHARED:.*]] = memref.get_global @reduce_shared0 : memref<32xf32>
// CHECK: %[[X:.*]] = arith.constant 0 : i32
// CHECK: %[[TID:.*]] = call @rewire_emu_thread_id(%[[X]]) : (i32) -> index
// CHECK: call @rewire_emu_block_id
// CHECK: call @rewire_emu_block_dim
// Every access is bounds-checked first, numbered in order.
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %[[C64:.*]] : index
// CHECK: %[[OK:.*]] = arith.andi %{{.*}}, %[[IN]] : i1
// CHECK: %[[SITE0:.*]] = arith.constant 0 : i32
// CHECK: call @rewire_emu_check(%[[OK]], %[[SITE0]]) : (i1, i32) -> ()
// CHECK-NEXT: memref.load
// CHECK: %[[V:.*]] = call @rewire_emu_shuffle_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (f32, i32, i32, i32) -> f32
// CHECK: call @rewire_emu_shuffle_valid
// CHECK: %[[SITE1:.*]] = arith.constant 1 : i32
// CHECK: call @rewire_emu_check(%{{.*}}, %[[SITE1]])
// CHECK-NEXT: memref.store %[[V]], %[[SHARED]][%[[TID]]] : memref<32xf32>
// CHECK: call @rewire_emu_barrier() : () -> ()
// CHECK: return
// CHECK: func.func private @rewire_emu_thread_id(i32) -> index
module attributes {gpu.container_module} {
  func.func @host(%a: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@reduce blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<64xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @reduce(%a: memref<64xf32>) workgroup(%s : memref<32xf32, #gpu.address_space<workgroup>>) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %i = arith.muli %bid, %bdim : index
      %j = arith.addi %i, %tid : index
      %v = memref.load %a[%j] : memref<64xf32>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %r, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
      memref.store %r, %s[%tid] : memref<32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      gpu.return
    }
  }
}

// -----

// 64-bit shuffles are split into two 32-bit ones, as for NVVM.
// CHECK-LABEL: func.func @wide(
// CHECK-COUNT-2: call @rewire_emu_shuffle_i32
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @wide(%a: memref<2xi64>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<2xi64>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %r, %ok = gpu.shuffle down %v, %c1, %c32 : i64
      memref.store %r, %a[%c0] : memref<2xi64>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @unsupported(%a: memref<32xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<32xf32>
      // expected-error @+1 {{rewire-kernels-to-emulator: 'gpu.subgroup_reduce' is not emulated}}
      %r = gpu.subgroup_reduce add %v : (f32) -> f32
      memref.store %r, %a[%c0] : memref<32xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{rewire-kernels-to-emulator: kernel argument of type 'f32' is not a buffer}}
    gpu.func @scalar(%a: memref<32xf32>, %s: f32) kernel {
      gpu.return
    }
  }
}
