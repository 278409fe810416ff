/**
 * Type declarations of `webnn-node`: the W3C Web Neural Network API (WebNN) for Node.js.
 *
 * The API follows the WebNN Candidate Recommendation Draft of 2024-05-15
 * (https://www.w3.org/TR/2024/CRD-webnn-20240515/), sections 7.1 to 7.8.47 and 10.1.
 * Members marked `@nonstandard` are extensions of this implementation that the CRD does not
 * have.
 *
 * Errors follow the spec:
 * - `MLGraphBuilder` methods validate synchronously and **throw a `TypeError`** on invalid
 *   arguments. Besides the conditions listed on each method, every method throws when an argument
 *   fails WebIDL conversion (an object that is not an `MLOperand` / `MLActivation`, an
 *   unknown enum string, an `[EnforceRange]` integer that is NaN, infinite or out of range), and
 *   when an operand or activation was created by a different `MLGraphBuilder`.
 * - Promise-returning methods never throw; they **reject**: `ML.createContext()` with a
 *   `"NotSupportedError"` `DOMException`; `MLGraphBuilder.build()` with a `TypeError` (invalid
 *   outputs) or an `"OperationError"` `DOMException` (the graph cannot be compiled);
 *   `MLContext.compute()` with a `TypeError` (inputs/outputs that do not match the graph) or an
 *   `"OperationError"` `DOMException` (execution failed).
 *
 * `[EnforceRange] unsigned long` arguments and members are typed `number`: they must be finite
 * and in the range 0 to 2^32 - 1 (fractions are truncated toward zero, per WebIDL).
 *
 * The main entry (`require('webnn-node')` or `import ... from 'webnn-node'`) exports `ml` and the
 * classes below. The opt-in entry `webnn-node/polyfill` installs them as globals; see
 * `polyfill.d.ts`.
 *
 * @packageDocumentation
 */

// ---------------------------------------------------------------------------------------------
// Typing aids (not IDL declarations)
// ---------------------------------------------------------------------------------------------

/** The instance type of the global `Float16Array` where the TypeScript lib declares it, else `never`. */
type Float16ArrayInstance = typeof globalThis extends { Float16Array: { prototype: infer T } } ? T : never;

/** The WebGPU `GPUDevice` instance type where WebGPU typings (e.g. `@webgpu/types`) are loaded, else `never`. */
type GPUDeviceInstance = typeof globalThis extends { GPUDevice: { prototype: infer T } } ? T : never;

/**
 * The view type for `"float16"` data: the raw IEEE 754 binary16 bits in a `Uint16Array`, or a
 * `Float16Array` where the runtime and the TypeScript lib have it (the union reduces to
 * `Uint16Array` when the lib lacks `Float16Array`). Section 10.1 maps `"float16"` to
 * `Float16Array` and allows emulating it with `Uint16Array` bits.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#appendices-mloperanddatatype-arraybufferview
 */
export type MLFloat16Array = Uint16Array | Float16ArrayInstance;

/**
 * The `ArrayBufferView` type that holds data of each `MLOperandDataType` (section 10.1), for
 * `constant()`, `compute()` inputs and outputs. The CRD's table has no rows for `"int64"` and
 * `"uint64"`; this implementation uses `BigInt64Array` and `BigUint64Array` for them.
 * A view of another element type makes `constant()` throw and `compute()` reject with a `TypeError`.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#appendices-mloperanddatatype-arraybufferview
 */
export interface MLOperandDataTypeArrayMap {
  /** 32-bit IEEE 754 floats. */
  float32: Float32Array;
  /** 16-bit IEEE 754 floats, as `Uint16Array` bits or a `Float16Array`. */
  float16: MLFloat16Array;
  /** Signed 32-bit integers. */
  int32: Int32Array;
  /** Unsigned 32-bit integers. */
  uint32: Uint32Array;
  /** Signed 64-bit integers (not in the CRD's table; this implementation's mapping). */
  int64: BigInt64Array;
  /** Unsigned 64-bit integers (not in the CRD's table; this implementation's mapping). */
  uint64: BigUint64Array;
  /** Signed 8-bit integers. */
  int8: Int8Array;
  /** Unsigned 8-bit integers; also the type of boolean results of logical operations. */
  uint8: Uint8Array;
}

/**
 * The typed array that holds data of the data type `T` (all of them when `T` is omitted),
 * e.g. `MLTypedArray<'float32'>` is `Float32Array`.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#appendices-mloperanddatatype-arraybufferview
 */
export type MLTypedArray<T extends MLOperandDataType = MLOperandDataType> = MLOperandDataTypeArrayMap[T];

/**
 * The WebGPU `GPUDevice` accepted by `ML.createContext(gpuDevice)`: the global `GPUDevice` type
 * where WebGPU typings are loaded, `never` otherwise (Node.js has no WebGPU of its own).
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-ml-createcontext
 */
export type MLGPUDevice = GPUDeviceInstance;

// ---------------------------------------------------------------------------------------------
// 7.2 ML interface
// ---------------------------------------------------------------------------------------------

/**
 * The kind of device a context prefers to run on.
 * - `"cpu"`: the broadest compatibility across client devices, with varying performance.
 * - `"gpu"`: the broadest range of achievable performance across graphics hardware.
 * - `"npu"`: an accelerator; webnn-node has none of its own and picks the GPU engine where a
 *   hardware GPU adapter exists, the CPU engine otherwise (clients still pass it).
 * The current draft dropped `deviceType` in favour of `accelerated` and `powerPreference`;
 * webnn-node keeps accepting it.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#enumdef-mldevicetype
 */
export type MLDeviceType = "cpu" | "gpu" | "npu";

/**
 * The application's preference as to power consumption; a hint only.
 * - `"default"`: let the implementation choose.
 * - `"high-performance"`: prioritize execution speed over power consumption.
 * - `"low-power"`: prioritize power consumption over execution speed.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#enumdef-mlpowerpreference
 */
export type MLPowerPreference = "default" | "high-performance" | "low-power";

/**
 * Options of `ML.createContext()`: the preferred device type and power preference.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#dictdef-mlcontextoptions
 */
export interface MLContextOptions {
  /**
   * The application's preference for the kind of device used by the context.
   * @defaultValue `"cpu"`
   */
  deviceType?: MLDeviceType;
  /**
   * The application's preference as related to power consumption.
   * @defaultValue `"default"`
   */
  powerPreference?: MLPowerPreference;
  /**
   * The current draft's hint that an accelerated device is preferred. Without `deviceType`:
   * `true` given explicitly (or `powerPreference: "high-performance"`) picks the GPU engine where a
   * hardware GPU adapter exists, the CPU engine otherwise; absent or `false` is the CPU engine
   * (the CPU stays the default, as before). Read back as `MLContext.accelerated`.
   * @see https://webmachinelearning.github.io/webnn/#dom-mlcontextoptions-accelerated
   */
  accelerated?: boolean;
  /**
   * Size of the CPU thread pool that runs this context's work, after Chromium's non-standard
   * option of the same name. `0` or absent means one thread per available core. Converted like an
   * `[EnforceRange] unsigned long`: a negative, NaN or infinite value makes `createContext()`
   * reject with a `TypeError`.
   * @defaultValue `0` (all cores)
   * @nonstandard Not in the WebNN CRD.
   */
  numThreads?: number;
  /**
   * CPU contexts: pin the threads of a pool that has one thread per available core, each to its
   * own core, so that the scheduler cannot stack two of them on one core after other threads of
   * the process ran (measured: MobileNetV2 on 2 threads after an onnxruntime run, 4.8 ms unpinned,
   * 3.1 ms pinned). Smaller pools are never pinned. Contexts share thread pools per
   * (`numThreads`, `pinThreads`) pair, so `false` gets a separate, unpinned pool. Linux only; where
   * the system forbids it the threads stay unpinned. Ignored by GPU contexts.
   * @defaultValue `true`
   * @nonstandard This implementation's extension (docs/CONFIG.md).
   */
  pinThreads?: boolean;
  /**
   * CPU contexts with several threads: keep the pool's other threads busy-waiting for work
   * between a compute's steps (each for at most 300 microseconds without work) instead of
   * letting them sleep, so no step waits for a thread to wake (measured: ResNet-50 on 2 threads
   * beside a low-priority busy process, 26.7 -> 21.3 ms). Costs CPU time while a compute runs
   * serial parts. Applies to this context's computes. Ignored by GPU contexts.
   * @defaultValue `true`
   * @nonstandard This implementation's extension (docs/CONFIG.md).
   */
  keepAwake?: boolean;
  /**
   * CPU contexts: wake one pool thread as `compute()` starts checking its arguments, so the
   * thread is awake when the work arrives (measured: SqueezeNet on 1 thread, 30 microseconds less
   * per compute). The thread spins for at most 400 microseconds. Applies to this context's
   * computes. Ignored by GPU contexts.
   * @defaultValue `true`
   * @nonstandard This implementation's extension (docs/CONFIG.md).
   */
  prewake?: boolean;
  /**
   * CPU contexts whose pool leaves a core free (`numThreads` below the core count): shortly
   * before a compute ends, wake the JavaScript thread, which then waits (at most 1 ms) for the
   * result, so the promise settles without the thread's wake-up delay (measured: 50-120
   * microseconds on a VM). Applies to this context's computes. Ignored by GPU contexts.
   * @defaultValue `true`
   * @nonstandard This implementation's extension (docs/CONFIG.md).
   */
  earlyWake?: boolean;
  /**
   * CPU contexts: compute each matmul and gemm whose right operand is `dequantizeLinear` of a
   * constant int8 or uint8 tensor (per output column or per tensor, as weight-only quantized
   * transformers ship) in int8 arithmetic: each row of the float32 left operand is quantized to
   * uint8 at run time with its own scale and zero point, products summed in int32 (AVX-512 VNNI
   * where the CPU has it), then scaled back to float32 (measured: a 2-layer BERT-base encoder,
   * sequence 128, about 2x faster than float32; benchmark/quant.js). This is not the float32
   * definition: each activation moves by up to one step of its row, `(max - min) / 255`, so a
   * result may differ from the exact product by up to that step times the sum of the column's
   * absolute weights; a row holding NaN or an infinity gives NaN in every column. Applies to
   * graphs built on this context. Ignored by GPU contexts.
   * @defaultValue `false` (the float32 definition)
   * @nonstandard This implementation's extension (docs/CONFIG.md).
   */
  dynamicQuantization?: boolean;
  /**
   * GPU contexts: the directory where compiled GPU pipelines are kept between processes (Vulkan
   * pipeline cache, one file per adapter and driver), so a later process building the same
   * operators skips the driver's shader compiler. Created when first needed; a damaged file is
   * ignored and replaced; an unusable directory only turns the cache off. `''` keeps nothing on
   * disk. Ignored by CPU contexts and by backends without pipeline caches (Metal, DirectX 12).
   * @defaultValue the per-user cache directory: `$XDG_CACHE_HOME/webnn-node` or
   * `~/.cache/webnn-node` (Linux), `~/Library/Caches/webnn-node` (macOS),
   * `%LOCALAPPDATA%\webnn-node` (Windows)
   * @nonstandard This implementation's extension (docs/CONFIG.md).
   */
  gpuCacheDirectory?: string;
}

/**
 * The entry point of the API (`navigator.ml` in browsers, `ml` exported by this package): creates
 * `MLContext`s. Not constructible; use the exported `ml` instance.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-ml
 */
export declare class ML {
  private constructor();
  /**
   * Creates a context for the given device type and power preference.
   *
   * The returned promise rejects with a `"NotSupportedError"` `DOMException` when the
   * implementation cannot support the requested `deviceType` and `powerPreference`, and with a
   * `TypeError` when `options` fails WebIDL conversion (e.g. an unknown `deviceType`). The spec's
   * `"SecurityError"` (permissions policy) does not apply in Node.js.
   * @param options - Device type and power preference; defaults to `{}` (`"cpu"`, `"default"`).
   * @returns A promise of the new context.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-ml-createcontext
   */
  createContext(options?: MLContextOptions): Promise<MLContext>;
  /**
   * Creates a context that shares an application's WebGPU device. Node.js has no WebGPU, and this
   * implementation drives its own GPU device (request `{ deviceType: "gpu" }` instead), so it
   * cannot run on a caller's `GPUDevice`; the spec's outcome for a device that cannot be
   * supported is a rejection with a `"NotSupportedError"` `DOMException`. The parameter type is
   * `never` unless WebGPU typings are loaded.
   * @param gpuDevice - A WebGPU `GPUDevice`.
   * @returns A promise of the new context.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-ml-createcontext
   */
  createContext(gpuDevice: MLGPUDevice): Promise<MLContext>;
}

// ---------------------------------------------------------------------------------------------
// 7.3 MLContext interface
// ---------------------------------------------------------------------------------------------

/**
 * A map from input or output names to the `ArrayBufferView`s that hold their values. Each view's
 * element type must match its operand's data type (see `MLOperandDataTypeArrayMap`) and its byte
 * length must equal the operand's byte length.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#typedefdef-mlnamedarraybufferviews
 */
export type MLNamedArrayBufferViews = Record<string, ArrayBufferView>;

/**
 * The fulfillment value of `MLContext.compute()`: the transferred input and output views.
 *
 * `compute()` transfers every view it is given (section 7.3.1): the caller's views are detached
 * (their `byteLength` becomes 0) as soon as `compute()` returns, and `inputs` and `outputs` here
 * hold, under the same names, new views of the same type, `byteOffset` and length over the same
 * memory. The computed results are in `outputs`; read them from here, not from the caller's views.
 *
 * The type parameters carry the caller's view types through to the result; they default to
 * `MLNamedArrayBufferViews`.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#dictdef-mlcomputeresult
 */
export interface MLComputeResult<
  I extends MLNamedArrayBufferViews = MLNamedArrayBufferViews,
  O extends MLNamedArrayBufferViews = MLNamedArrayBufferViews,
> {
  /** The graph input names mapped to the transferred views of the supplied input values. */
  inputs: I;
  /** The graph output names mapped to the transferred views that now hold the computed values. */
  outputs: O;
}

/**
 * The global state of neural network execution: the device and the resources that compile
 * and run graphs. Created by `ML.createContext()`; not constructible.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlcontext
 */
export declare class MLContext {
  private constructor();
  /**
   * Runs a compiled graph asynchronously, off the calling thread, reading `inputs` and writing
   * the results into the memory of `outputs`.
   *
   * The input and output views are transferred (section 7.3.1) so the caller cannot modify
   * them while the computation runs: after the call the caller's views are detached, and the
   * result holds new views of the same type, `byteOffset` and length over the same memory (see
   * `MLComputeResult`). Validation happens before the transfer, so a call rejected for a
   * mismatched input or output leaves the caller's views attached.
   *
   * The promise rejects with a `TypeError` when `graph` was built by another context's builder,
   * an input of the graph is missing from `inputs`, a name in `outputs` is not an output of the
   * graph, a view's element type does not match its operand's data type or its byte length is not
   * the operand's byte length, or a view cannot be transferred (already detached, backed by a
   * `SharedArrayBuffer`, or sharing its buffer with another view in the call). It rejects with an
   * `"OperationError"` `DOMException` when the execution fails.
   * @param graph - A graph compiled by `MLGraphBuilder.build()` from this context.
   * @param inputs - A view for every input of the graph, keyed by input name.
   * @param outputs - Preallocated views for the requested outputs, keyed by output name.
   * @returns A promise of the transferred inputs and outputs.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlcontext-compute
   */
  compute<I extends MLNamedArrayBufferViews, O extends MLNamedArrayBufferViews>(
    graph: MLGraph,
    inputs: I,
    outputs: O,
  ): Promise<MLComputeResult<I, O>>;

  /**
   * Enqueues one execution of `graph` on the context's timeline: reads the input tensors,
   * writes the output tensors, returns at once. Work on one context runs in the order it was
   * issued, so a later `readTensor()` sees the results and a tensor written by one dispatch can
   * be read by the next. Throws a `TypeError` for a graph or tensor of another context, a missing
   * or extra tensor, a tensor whose data type or shape differs from its operand's, a destroyed
   * or constant tensor, or one tensor used as input and output; `"InvalidStateError"` for a
   * destroyed context or graph. A failed execution makes later reads of its outputs reject with
   * an `"OperationError"`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlcontext-dispatch
   */
  dispatch(graph: MLGraph, inputs: MLNamedTensors, outputs: MLNamedTensors): void;
  /**
   * A zero-filled tensor owned by the context. `readable`/`writable` allow `readTensor()` and
   * `writeTensor()`. Rejects with a `TypeError` for an invalid descriptor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlcontext-createtensor
   */
  createTensor(descriptor: MLTensorDescriptor): Promise<MLTensor>;
  /**
   * A tensor holding a copy of `inputData` (exactly the descriptor's byte length), usable only as
   * `MLGraphBuilder.constant(tensor)`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlcontext-createconstanttensor
   */
  createConstantTensor(descriptor: MLOperandDescriptor, inputData: AllowSharedBufferSource): Promise<MLTensor>;
  /**
   * Resolves to a new `ArrayBuffer` with the tensor's bytes, after all work issued before it.
   * @see https://webmachinelearning.github.io/webnn/#api-mlcontext-readtensor
   */
  readTensor(tensor: MLTensor): Promise<ArrayBuffer>;
  /**
   * Writes the tensor's bytes into `outputData` (an `ArrayBuffer`, a `SharedArrayBuffer` or a
   * view of either, at least the tensor's byte length), after all work issued before it.
   */
  readTensor(tensor: MLTensor, outputData: AllowSharedBufferSource): Promise<undefined>;
  /**
   * Copies `inputData` (exactly the tensor's byte length) before returning; the write takes
   * effect in timeline order. Throws a `TypeError` for a tensor that is not writable.
   * @see https://webmachinelearning.github.io/webnn/#api-mlcontext-writetensor
   */
  writeTensor(tensor: MLTensor, inputData: AllowSharedBufferSource): void;
  /**
   * Per operator and operand, the data types and ranks `build()` accepts on this context's
   * engine (an operator or data type left out is one `build()` rejects), plus the limits for
   * graph inputs, constants and outputs. A new object each call.
   * @see https://webmachinelearning.github.io/webnn/#api-mlcontext-opsupportlimits
   */
  opSupportLimits(): MLOpSupportLimits;
  /**
   * Destroys the context: queued reads reject with `"InvalidStateError"`, `lost` resolves, and
   * later calls throw (or reject with) `"InvalidStateError"`. Idempotent.
   */
  destroy(): void;
  /** Whether the context runs on a hardware accelerator (a GPU adapter that is not software). */
  readonly accelerated: boolean;
  /** Resolves when the context is destroyed. */
  readonly lost: Promise<MLContextLostInfo>;
}

/** A `BufferSource` that may also be shared: what the tensor API reads from and writes to. */
export type AllowSharedBufferSource = ArrayBuffer | SharedArrayBuffer | ArrayBufferView;

/** `MLContext.lost`'s value. */
export interface MLContextLostInfo {
  message?: string;
}

/** Tensors keyed by graph input or output name, for `MLContext.dispatch()`. */
export type MLNamedTensors = Record<string, MLTensor>;

/**
 * An `MLOperandDescriptor` plus the access a tensor allows.
 * @see https://webmachinelearning.github.io/webnn/#dictdef-mltensordescriptor
 */
export interface MLTensorDescriptor extends MLOperandDescriptor {
  /** `readTensor()` may read it. @defaultValue `false` */
  readable?: boolean;
  /** `writeTensor()` may write it. @defaultValue `false` */
  writable?: boolean;
  /**
   * An earlier draft's flags (`MLTensorUsage.READ | MLTensorUsage.WRITE`), used where
   * `readable`/`writable` are absent.
   * @deprecated Use `readable` and `writable`.
   */
  usage?: number;
}

/**
 * Memory owned by a context (a copy of the bytes lives with the engine, out of any caller's
 * reach): written by `writeTensor()`, read by `readTensor()`, bound to graph inputs and outputs by
 * `dispatch()`. Created by `MLContext.createTensor()`; not constructible.
 * @see https://webmachinelearning.github.io/webnn/#api-mltensor
 */
export declare class MLTensor {
  private constructor();
  private readonly __brand;
  readonly dataType: MLOperandDataType;
  readonly shape: readonly number[];
  readonly readable: boolean;
  readonly writable: boolean;
  /** Made by `createConstantTensor()`: usable only as `MLGraphBuilder.constant(tensor)`. */
  readonly constant: boolean;
  /** Releases the memory; later uses throw a `TypeError`. Idempotent. */
  destroy(): void;
}

/** An earlier draft's tensor usage flags, still sent by ONNX Runtime Web 1.20-1.21. */
export declare const MLTensorUsage: { readonly WEBGPU_INTEROP: 1; readonly READ: 2; readonly WRITE: 4 };

/** A class without instances where the runtime has no WebGPU, so `x instanceof GPUDevice` works. */
export declare class GPUDevice {
  private constructor();
}

/** The data types and rank range of one operand. */
export interface MLTensorLimits {
  dataTypes: MLOperandDataType[];
  rankRange: { min: number; max: number };
}

/**
 * `MLContext.opSupportLimits()`: context-wide limits, then one entry per operator keyed by its
 * method name, each keyed by operand name (`a`, `input`, `filter`, ..., `output`).
 * @see https://webmachinelearning.github.io/webnn/#api-mlcontext-opsupportlimits-dictionary
 */
export interface MLOpSupportLimits {
  preferredInputLayout: MLInputOperandLayout;
  maxTensorByteLength: number;
  input: MLTensorLimits;
  constant: MLTensorLimits;
  output: MLTensorLimits;
  [operator: string]: Record<string, MLTensorLimits> | MLTensorLimits | MLInputOperandLayout | number;
}

// ---------------------------------------------------------------------------------------------
// 7.4 MLGraph interface
// ---------------------------------------------------------------------------------------------

/**
 * A compiled, immutable computational graph, bound to the context of the builder that built
 * it. Created by `MLGraphBuilder.build()`; not constructible.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraph
 */
export declare class MLGraph {
  private constructor();
  /** Nominal brand: only objects made by this package are of this type. */
  private readonly __brand;
  /** Later `dispatch()`/`compute()` calls with the graph fail with `"InvalidStateError"`. */
  destroy(): void;
}

// ---------------------------------------------------------------------------------------------
// 7.5 MLOperandDescriptor dictionary
// ---------------------------------------------------------------------------------------------

/**
 * The data type of the elements of an operand. See `MLOperandDataTypeArrayMap` for the
 * `ArrayBufferView` type of each.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#enumdef-mloperanddatatype
 */
export type MLOperandDataType = "float32" | "float16" | "int32" | "uint32" | "int64" | "uint64" | "int8" | "uint8";

/**
 * The data type and shape of an operand, used to declare graph inputs and constants.
 *
 * Every dimension must be an integer greater than 0 (the spec's valid dimension); otherwise
 * `input()` and `constant()` throw a `TypeError`.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#dictdef-mloperanddescriptor
 */
export interface MLOperandDescriptor {
  /** The operand data type. */
  dataType: MLOperandDataType;
  /**
   * The shape of the operand (the current draft's name): empty for a scalar. Required by
   * `createTensor()`; elsewhere absent means `[]`. When both `shape` and `dimensions` are given,
   * `shape` is used.
   * @see https://webmachinelearning.github.io/webnn/#dom-mloperanddescriptor-shape
   */
  shape?: number[];
  /**
   * The CRD's name of `shape`, still accepted; ignored when `shape` is given.
   * @defaultValue `[]`
   */
  dimensions?: number[];
}

// ---------------------------------------------------------------------------------------------
// 7.6 MLOperand interface
// ---------------------------------------------------------------------------------------------

/**
 * A node output in a graph under construction: a graph input, a constant or the result of an
 * operation. Created by `MLGraphBuilder` methods and bound to that builder; not constructible.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mloperand
 */
export declare class MLOperand {
  private constructor();
  /** Nominal brand: only objects made by this package are of this type. */
  private readonly __brand;
  /**
   * The data type of the operand (an attribute in the current draft; the CRD's `dataType()`
   * method form is retired).
   * @see https://webmachinelearning.github.io/webnn/#dom-mloperand-datatype
   */
  readonly dataType: MLOperandDataType;
  /**
   * The shape of the operand, a frozen array; empty for a scalar (an attribute in the current
   * draft; the CRD's `shape()` method form is retired).
   * @see https://webmachinelearning.github.io/webnn/#dom-mloperand-shape
   */
  readonly shape: readonly number[];
}

// ---------------------------------------------------------------------------------------------
// 7.7 MLActivation interface
// ---------------------------------------------------------------------------------------------

/**
 * An activation function (e.g. `relu`, `sigmoid`, `tanh`) not yet applied to an operand, passed
 * to the recurrent operators `gru()`, `gruCell()`, `lstm()` and `lstmCell()` in their
 * `activations` option. Created by calling an activation method of `MLGraphBuilder` without an
 * input, e.g. `builder.sigmoid()`, and bound to that builder; not constructible.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlactivation
 */
export declare class MLActivation {
  private constructor();
  /** Nominal brand: only objects made by this package are of this type. */
  private readonly __brand;
}

// ---------------------------------------------------------------------------------------------
// 7.8 MLGraphBuilder: options dictionaries and enums of the operators
// ---------------------------------------------------------------------------------------------

/**
 * A map from output names to the operands that a graph computes, given to `build()`.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#typedefdef-mlnamedoperands
 */
export type MLNamedOperands = Record<string, MLOperand>;

/** A scalar of the current draft: a `bigint` for 64-bit integer types, else a number. */
export type MLNumber = number | bigint;

/**
 * Every operator's options (the current draft): `label` names the operator in the messages of
 * the errors it throws, as `conv2d (label "stem"): ...`.
 */
export interface MLOperatorOptions {
  label?: string;
}

// <operator-table: types>
/** `MLConv2dFilterOperandLayout`: `"oihw"`, `"hwio"`, `"ohwi"`, `"ihwo"`. */
export type MLConv2dFilterOperandLayout = "oihw" | "hwio" | "ohwi" | "ihwo";

/** `MLInputOperandLayout`: `"nchw"`, `"nhwc"`. */
export type MLInputOperandLayout = "nchw" | "nhwc";

/** `MLConvTranspose2dFilterOperandLayout`: `"iohw"`, `"hwoi"`, `"ohwi"`. */
export type MLConvTranspose2dFilterOperandLayout = "iohw" | "hwoi" | "ohwi";

/** `MLRoundingType`: `"floor"`, `"ceil"`. */
export type MLRoundingType = "floor" | "ceil";

/** `MLPaddingMode`: `"constant"`, `"edge"`, `"reflection"`, `"symmetric"`. */
export type MLPaddingMode = "constant" | "edge" | "reflection" | "symmetric";

/** `MLInterpolationMode`: `"nearest-neighbor"`, `"linear"`. */
export type MLInterpolationMode = "nearest-neighbor" | "linear";

/** `MLRecurrentNetworkActivation`: `"relu"`, `"sigmoid"`, `"tanh"`. */
export type MLRecurrentNetworkActivation = "relu" | "sigmoid" | "tanh";

/** `MLRecurrentNetworkDirection`: `"forward"`, `"backward"`, `"both"`. */
export type MLRecurrentNetworkDirection = "forward" | "backward" | "both";

/** `MLGruWeightLayout`: `"zrn"`, `"rzn"`. */
export type MLGruWeightLayout = "zrn" | "rzn";

/** `MLLstmWeightLayout`: `"iofg"`, `"ifgo"`. */
export type MLLstmWeightLayout = "iofg" | "ifgo";

/** Options of `clamp()`. */
export interface MLClampOptions extends MLOperatorOptions {
  /** The upper bound of the range; when absent, the upper side is not clamped. */
  maxValue?: MLNumber;
  /** The lower bound of the range; when absent, the lower side is not clamped. */
  minValue?: MLNumber;
}

/** Options of `transpose()`. */
export interface MLTransposeOptions extends MLOperatorOptions {
  /**
   * The permutation of the input dimensions: a list of the input's rank holding each of 0 to
   * N-1 exactly once. Default `[N-1, ..., 1, 0]` (reverses the dimensions).
   */
  permutation?: number[];
}

/** Options of `slice()`. */
export interface MLSliceOptions extends MLOperatorOptions {
  /**
   * The step in each dimension (one per dimension, at least 1): the slice takes every stride-th
   * element of its window. Default 1 in each dimension.
   */
  strides?: number[];
}

/** Options of `split()`. */
export interface MLSplitOptions extends MLOperatorOptions {
  /**
   * The dimension along which to split, in the range [0, N-1] where N is the input's rank.
   *
   * @defaultValue `0`
   */
  axis?: number;
}

/** Options of `elu()`. */
export interface MLEluOptions extends MLOperatorOptions {
  /**
   * The scalar multiplier of the negative part.
   *
   * @defaultValue `1`
   */
  alpha?: number;
}

/** Options of `hardSigmoid()`. */
export interface MLHardSigmoidOptions extends MLOperatorOptions {
  /**
   * The scalar multiplier.
   *
   * @defaultValue `0.2`
   */
  alpha?: number;
  /**
   * The scalar addition.
   *
   * @defaultValue `0.5`
   */
  beta?: number;
}

/** Options of `leakyRelu()`. */
export interface MLLeakyReluOptions extends MLOperatorOptions {
  /**
   * The slope of the negative part.
   *
   * @defaultValue `0.01`
   */
  alpha?: number;
}

/** Options of `linear()`. */
export interface MLLinearOptions extends MLOperatorOptions {
  /**
   * The scalar multiplier.
   *
   * @defaultValue `1`
   */
  alpha?: number;
  /**
   * The scalar addition.
   *
   * @defaultValue `0`
   */
  beta?: number;
}

/** Options of `gemm()`. */
export interface MLGemmOptions extends MLOperatorOptions {
  /**
   * Whether the first input is transposed before the multiplication.
   *
   * @defaultValue `false`
   */
  aTranspose?: boolean;
  /**
   * The multiplier of A * B.
   *
   * @defaultValue `1`
   */
  alpha?: number;
  /**
   * Whether the second input is transposed before the multiplication.
   *
   * @defaultValue `false`
   */
  bTranspose?: boolean;
  /**
   * The multiplier of c.
   *
   * @defaultValue `1`
   */
  beta?: number;
  /**
   * The third input: a scalar, or a tensor unidirectionally broadcastable to [M, N]. When
   * absent, the computation is done as if c were the scalar 0.
   */
  c?: MLOperand;
}

/** Options of `conv2d()`. */
export interface MLConv2dOptions extends MLOperatorOptions {
  /** A 1-D tensor of shape [outputChannels] added to the convolution result. */
  bias?: MLOperand;
  /**
   * [dilationHeight, dilationWidth]: the dilation factor of the filter in each spatial
   * dimension. Default `[1, 1]`.
   */
  dilations?: number[];
  /**
   * The layout of the filter tensor.
   *
   * @defaultValue `"oihw"`
   */
  filterLayout?: MLConv2dFilterOperandLayout;
  /**
   * The number of groups input and output channels are divided into (non-zero). A depthwise
   * convolution has groups = inputChannels = outputChannels.
   *
   * @defaultValue `1`
   */
  groups?: number;
  /**
   * The layout of the input and output tensors.
   *
   * @defaultValue `"nchw"`
   */
  inputLayout?: MLInputOperandLayout;
  /**
   * [beginningHeight, endingHeight, beginningWidth, endingWidth]: rows and columns added to the
   * beginning and end of each spatial dimension of the input. Default `[0, 0, 0, 0]`.
   */
  padding?: number[];
  /**
   * [strideHeight, strideWidth]: the stride of the sliding window; values must be non-zero.
   * Default `[1, 1]`.
   */
  strides?: number[];
}

/** Options of `convTranspose2d()`. */
export interface MLConvTranspose2dOptions extends MLOperatorOptions {
  /** A 1-D tensor of shape [outputChannels] added to the convolution result. */
  bias?: MLOperand;
  /**
   * [dilationHeight, dilationWidth]: the dilation factor of the filter in each spatial
   * dimension. Default `[1, 1]`.
   */
  dilations?: number[];
  /**
   * The layout of the filter tensor.
   *
   * @defaultValue `"iohw"`
   */
  filterLayout?: MLConvTranspose2dFilterOperandLayout;
  /**
   * The number of groups input and output channels are divided into.
   *
   * @defaultValue `1`
   */
  groups?: number;
  /**
   * The layout of the input and output tensors.
   *
   * @defaultValue `"nchw"`
   */
  inputLayout?: MLInputOperandLayout;
  /**
   * [outputPaddingHeight, outputPaddingWidth]: padding of the output's spatial dimensions,
   * which disambiguates the output shape when a stride is greater than 1; each value must be
   * smaller than the corresponding stride. Ignored when `outputSizes` is given. Default `[0,
   * 0]`.
   */
  outputPadding?: number[];
  /**
   * [outputHeight, outputWidth]: the sizes of the output's spatial dimensions. When absent,
   * they are computed from the input, filter, padding, strides, dilations and outputPadding.
   */
  outputSizes?: number[];
  /**
   * [beginningHeight, endingHeight, beginningWidth, endingWidth]: padding of each spatial
   * dimension of the input. Default `[0, 0, 0, 0]`.
   */
  padding?: number[];
  /**
   * [strideHeight, strideWidth]: the stride of the sliding window; values must be non-zero.
   * Default `[1, 1]`.
   */
  strides?: number[];
}

/** Options of `averagePool2d()`, `l2Pool2d()`, `maxPool2d()`. */
export interface MLPool2dOptions extends MLOperatorOptions {
  /**
   * [dilationHeight, dilationWidth]: the dilation of the window; values must be greater than 0.
   * Default `[1, 1]`.
   */
  dilations?: number[];
  /**
   * The layout of the input and output tensors.
   *
   * @defaultValue `"nchw"`
   */
  layout?: MLInputOperandLayout;
  /** The current draft's name of `roundingType`; used when given. */
  outputShapeRounding?: MLRoundingType;
  /**
   * [outputHeight, outputWidth]: explicit sizes of the output's spatial dimensions. When
   * absent, they are computed from the other options.
   */
  outputSizes?: number[];
  /**
   * [beginningHeight, endingHeight, beginningWidth, endingWidth]: padding of each spatial
   * dimension of the input. Default `[0, 0, 0, 0]`.
   */
  padding?: number[];
  /**
   * The rounding of the computed output sizes; ignored when `outputSizes` is given.
   *
   * @defaultValue `"floor"`
   */
  roundingType?: MLRoundingType;
  /**
   * [strideHeight, strideWidth]: the stride of the sliding window; values must be greater than
   * 0. Default `[1, 1]`.
   */
  strides?: number[];
  /**
   * [windowHeight, windowWidth]: the size of the sliding window. When absent, the input's
   * spatial size (a global pooling).
   */
  windowDimensions?: number[];
}

/** Options of `batchNormalization()`. */
export interface MLBatchNormalizationOptions extends MLOperatorOptions {
  /**
   * The feature axis of the input.
   *
   * @defaultValue `1`
   */
  axis?: number;
  /** The 1-D bias tensor of shape [input.shape[axis]]; absent: 0. */
  bias?: MLOperand;
  /**
   * A small value added to the variance to avoid division by zero.
   *
   * @defaultValue `0.00001`
   */
  epsilon?: number;
  /** The 1-D scale tensor of shape [input.shape[axis]]; absent: 1. */
  scale?: MLOperand;
}

/** Options of `instanceNormalization()`. */
export interface MLInstanceNormalizationOptions extends MLOperatorOptions {
  /** The 1-D bias tensor of shape [channels]; absent: 0. */
  bias?: MLOperand;
  /**
   * A small value added to the variance to avoid division by zero.
   *
   * @defaultValue `0.00001`
   */
  epsilon?: number;
  /**
   * The layout of the input.
   *
   * @defaultValue `"nchw"`
   */
  layout?: MLInputOperandLayout;
  /** The 1-D scale tensor of shape [channels]; absent: 1. */
  scale?: MLOperand;
}

/** Options of `layerNormalization()`. */
export interface MLLayerNormalizationOptions extends MLOperatorOptions {
  /** The axes to normalize over; absent: every axis but the first. */
  axes?: number[];
  /** The bias tensor, of the shape of the input's dimensions at `axes`; absent: 0. */
  bias?: MLOperand;
  /**
   * A small value added to the variance to avoid division by zero.
   *
   * @defaultValue `0.00001`
   */
  epsilon?: number;
  /** The scale tensor, of the shape of the input's dimensions at `axes`; absent: 1. */
  scale?: MLOperand;
}

/**
 * Options of `reduceL1()`, `reduceL2()`, `reduceLogSum()`, `reduceLogSumExp()`, `reduceMax()`,
 * `reduceMean()`, `reduceMin()`, `reduceProduct()`, `reduceSum()`, `reduceSumSquare()`.
 */
export interface MLReduceOptions extends MLOperatorOptions {
  /**
   * The dimensions to reduce, each in the range [0, N-1] where N is the input's rank. When
   * absent, all dimensions are reduced; when empty, none is and the output shape is the
   * input's.
   */
  axes?: number[];
  /**
   * If true, the output keeps the input's rank, with the reduced dimensions of size 1.
   *
   * @defaultValue `false`
   */
  keepDimensions?: boolean;
}

/** Options of `argMin()`, `argMax()`. */
export interface MLArgMinMaxOptions extends MLOperatorOptions {
  /**
   * The dimensions to reduce, each in the range [0, N-1] where N is the input's rank. When
   * absent, all dimensions are reduced; when empty, none is and the output shape is the
   * input's.
   */
  axes?: number[];
  /**
   * If true, the reduced dimensions are retained with size 1.
   *
   * @defaultValue `false`
   */
  keepDimensions?: boolean;
  /**
   * If true, the last index of the extreme value is selected instead of the first.
   *
   * @defaultValue `false`
   */
  selectLastIndex?: boolean;
  /**
   * The output's data type, `"int32"` or `"int64"`.
   *
   * @defaultValue `"int32"`
   */
  outputDataType?: MLOperandDataType;
}

/** Options of `gather()`, `gatherElements()`. */
export interface MLGatherOptions extends MLOperatorOptions {
  /**
   * The axis along which values are gathered, in the range [0, N-1] where N is the input's
   * rank.
   *
   * @defaultValue `0`
   */
  axis?: number;
}

/** Options of `pad()`. */
export interface MLPadOptions extends MLOperatorOptions {
  /**
   * How the padded values are computed.
   *
   * @defaultValue `"constant"`
   */
  mode?: MLPaddingMode;
  /**
   * The padding value when `mode` is `"constant"`.
   *
   * @defaultValue `0`
   */
  value?: MLNumber;
}

/** Options of `resample2d()`. */
export interface MLResample2dOptions extends MLOperatorOptions {
  /**
   * The two consecutive input dimensions that are resampled: [0, 1], [1, 2] or [2, 3]. Default
   * `[2, 3]`.
   */
  axes?: number[];
  /**
   * The interpolation algorithm used to fill the output tensor values.
   *
   * @defaultValue `"nearest-neighbor"`
   */
  mode?: MLInterpolationMode;
  /**
   * [scaleHeight, scaleWidth]: the scaling factor of each resampled dimension (greater than 0).
   * Ignored when `sizes` is given. Default `[1.0, 1.0]`.
   */
  scales?: number[];
  /**
   * [sizeHeight, sizeWidth]: the target sizes of the resampled dimensions (greater than 0);
   * when given, `scales` is ignored.
   */
  sizes?: number[];
}

/** Options of `triangular()`. */
export interface MLTriangularOptions extends MLOperatorOptions {
  /**
   * How many diagonals above (positive) or below (negative) the main diagonal are retained or
   * excluded; 0 affects only the main diagonal.
   *
   * @defaultValue `0`
   */
  diagonal?: number;
  /**
   * Whether the upper (true) or the lower (false) triangular part is retained.
   *
   * @defaultValue `true`
   */
  upper?: boolean;
}

/** Options of `scatterElements()`. */
export interface MLScatterOptions extends MLOperatorOptions {
  /**
   * The axis along which updates are scattered, in the range [0, N-1] where N is the input's
   * rank.
   *
   * @defaultValue `0`
   */
  axis?: number;
}

/** Options of `gru()`. */
export interface MLGruOptions extends MLOperatorOptions {
  /**
   * Two activations: the first for the update and reset gates, the second for the new gate.
   * When absent, `[sigmoid, tanh]`.
   */
  activations?: Array<MLRecurrentNetworkActivation | MLActivation>;
  /**
   * The 2-D input bias tensor of shape [numDirections, 3 * hiddenSize], ordered per `layout`.
   */
  bias?: MLOperand;
  /**
   * The processing direction of the input sequence.
   *
   * @defaultValue `"forward"`
   */
  direction?: MLRecurrentNetworkDirection;
  /**
   * The 3-D initial hidden state of shape [numDirections, batchSize, hiddenSize]; zeros when
   * absent.
   */
  initialHiddenState?: MLOperand;
  /**
   * The ordering of the gate weights and biases.
   *
   * @defaultValue `"zrn"`
   */
  layout?: MLGruWeightLayout;
  /**
   * The 2-D recurrent bias tensor of shape [numDirections, 3 * hiddenSize], ordered per
   * `layout`.
   */
  recurrentBias?: MLOperand;
  /**
   * Whether the reset gate is applied after (true) or before (false) the matrix multiplication.
   *
   * @defaultValue `true`
   */
  resetAfter?: boolean;
  /**
   * Whether to also return the output of every time step, in addition to the last one.
   *
   * @defaultValue `false`
   */
  returnSequence?: boolean;
}

/** Options of `gruCell()`. */
export interface MLGruCellOptions extends MLOperatorOptions {
  /**
   * Two activations: the first for the update and reset gates, the second for the new gate.
   * When absent, `[sigmoid, tanh]`.
   */
  activations?: Array<MLRecurrentNetworkActivation | MLActivation>;
  /** The 1-D input bias tensor of shape [3 * hiddenSize], ordered per `layout`. */
  bias?: MLOperand;
  /**
   * The ordering of the gate weights and biases.
   *
   * @defaultValue `"zrn"`
   */
  layout?: MLGruWeightLayout;
  /** The 1-D recurrent bias tensor of shape [3 * hiddenSize], ordered per `layout`. */
  recurrentBias?: MLOperand;
  /**
   * Whether the reset gate is applied after (true) or before (false) the matrix multiplication.
   *
   * @defaultValue `true`
   */
  resetAfter?: boolean;
}

/** Options of `lstm()`. */
export interface MLLstmOptions extends MLOperatorOptions {
  /**
   * Three activations: for the input, forget and output gates; for the cell gate; and for the
   * cell state before it is combined with the output gate. When absent, `[sigmoid, tanh,
   * tanh]`.
   */
  activations?: Array<MLRecurrentNetworkActivation | MLActivation>;
  /**
   * The 2-D input bias tensor of shape [numDirections, 4 * hiddenSize], ordered per `layout`.
   */
  bias?: MLOperand;
  /**
   * The processing direction of the input sequence.
   *
   * @defaultValue `"forward"`
   */
  direction?: MLRecurrentNetworkDirection;
  /**
   * The 3-D initial cell state of shape [numDirections, batchSize, hiddenSize]; zeros when
   * absent.
   */
  initialCellState?: MLOperand;
  /**
   * The 3-D initial hidden state of shape [numDirections, batchSize, hiddenSize]; zeros when
   * absent.
   */
  initialHiddenState?: MLOperand;
  /**
   * The ordering of the gate weights and biases.
   *
   * @defaultValue `"iofg"`
   */
  layout?: MLLstmWeightLayout;
  /**
   * The 2-D peephole weight tensor of shape [numDirections, 3 * hiddenSize], packed in the
   * order input (i), output (o), forget (f).
   */
  peepholeWeight?: MLOperand;
  /**
   * The 2-D recurrent bias tensor of shape [numDirections, 4 * hiddenSize], ordered per
   * `layout`.
   */
  recurrentBias?: MLOperand;
  /**
   * Whether to also return the output of every time step, in addition to the last one.
   *
   * @defaultValue `false`
   */
  returnSequence?: boolean;
}

/** Options of `lstmCell()`. */
export interface MLLstmCellOptions extends MLOperatorOptions {
  /**
   * Three activations: for the input, forget and output gates; for the cell gate; and for the
   * cell state before it is combined with the output gate. When absent, `[sigmoid, tanh,
   * tanh]`.
   */
  activations?: Array<MLRecurrentNetworkActivation | MLActivation>;
  /** The 1-D input bias tensor of shape [4 * hiddenSize], ordered per `layout`. */
  bias?: MLOperand;
  /**
   * The ordering of the gate weights and biases.
   *
   * @defaultValue `"iofg"`
   */
  layout?: MLLstmWeightLayout;
  /**
   * The 1-D peephole weight tensor of shape [3 * hiddenSize], packed in the order input (i),
   * output (o), forget (f).
   */
  peepholeWeight?: MLOperand;
  /** The 1-D recurrent bias tensor of shape [4 * hiddenSize], ordered per `layout`. */
  recurrentBias?: MLOperand;
}

/** Options of `reverse()`. */
export interface MLReverseOptions extends MLOperatorOptions {
  /** The axes to reverse, each in [0, rank) and listed once. Default: every axis. */
  axes?: number[];
}

/** Options of `cumulativeSum()`. */
export interface MLCumulativeSumOptions extends MLOperatorOptions {
  /**
   * Whether each output element leaves out its own input element (a sum of the elements before
   * it).
   *
   * @defaultValue `false`
   */
  exclusive?: boolean;
  /**
   * Whether the sums run from the end of the axis to its start.
   *
   * @defaultValue `false`
   */
  reversed?: boolean;
}
// </operator-table: types>

// ---------------------------------------------------------------------------------------------
// 7.8 MLGraphBuilder interface
// ---------------------------------------------------------------------------------------------

/**
 * Builds a computational graph from inputs, constants and operations, then compiles it with
 * `build()` into an `MLGraph` for its context.
 *
 * Every operator method validates its arguments synchronously and throws a `TypeError` when
 * they are invalid (see the module documentation for the conditions common to all methods), and
 * returns a new operand without changing existing ones. Activation methods called without an
 * input return an `MLActivation` for the recurrent operators.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraphbuilder
 */
export declare class MLGraphBuilder {
  /**
   * Creates a graph builder bound to a context.
   * @param context - The context the graphs will be compiled for and run on.
   * @throws TypeError if `context` is not an `MLContext`.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraphbuilder-constructor
   */
  constructor(context: MLContext);

  /**
   * Creates a named input operand of the graph, whose value is supplied to `compute()`.
   * @param name - The input's name, the key of its view in `compute()`'s `inputs`.
   * @param descriptor - The input's data type and shape.
   * @returns The input operand.
   * @throws TypeError if `name` is empty, or a dimension of `descriptor` is not an integer
   * greater than 0, or the shape's rank or byte length is not supported.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraphbuilder-input
   */
  input(name: string, descriptor: MLOperandDescriptor): MLOperand;

  /**
   * Creates a constant operand holding a copy of `bufferView`'s bytes (later writes to the
   * buffer do not change the graph).
   * @param descriptor - The constant's data type and shape.
   * @param bufferView - The data: a view of the type of `descriptor.dataType` (see
   * `MLOperandDataTypeArrayMap`) whose byte length is the descriptor's byte length.
   * @returns The constant operand.
   * @throws TypeError if a dimension of `descriptor` is not valid, or the view's element type does
   * not match `descriptor.dataType`, or its byte length is not the descriptor's byte length.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraphbuilder-constant
   */
  constant(descriptor: MLOperandDescriptor, bufferView: ArrayBufferView): MLOperand;
  /**
   * Creates a scalar constant operand (shape `[]`) of `value` converted to `type`; values out of
   * the range of `type` are truncated (e.g. a float given for `"int8"`).
   * @param value - The value.
   * @param type - The data type. Defaults to `"float32"`.
   * @returns The scalar constant operand.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraphbuilder-constant
   */
  constant(value: number, type?: MLOperandDataType): MLOperand;
  /**
   * The current draft's forms: bytes from an `ArrayBuffer`, a `SharedArrayBuffer` or any view (a
   * typed array must still match the data type; a `DataView` or a bare buffer is checked only for
   * its byte length); a scalar of `dataType` from an `MLNumber` (a `bigint` keeps 64-bit integers
   * exact); or the bytes of a constant tensor made by `MLContext.createConstantTensor()`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-constant
   */
  constant(descriptor: MLOperandDescriptor, buffer: AllowSharedBufferSource): MLOperand;
  constant(dataType: MLOperandDataType, value: MLNumber): MLOperand;
  constant(tensor: MLTensor): MLOperand;

  /**
   * Compiles the part of the graph that the given outputs depend on, off the calling thread.
   *
   * The promise rejects with a `TypeError` when `outputs` is empty, an output name is empty, an
   * output operand was created by another builder or is itself an input or a constant (use
   * `identity()` to output one), or two different inputs reachable from the outputs share a
   * name. It rejects with an `"OperationError"` `DOMException` when the graph cannot be compiled
   * for the context's device.
   * @param outputs - The operands to compute, keyed by output name.
   * @returns A promise of the compiled graph.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraphbuilder-build
   */
  build(outputs: MLNamedOperands): Promise<MLGraph>;

  // <operator-table: methods>
  // 7.8.12 add --------------------------------------------------------------------------------

  /**
   * Adds two tensors element-wise, broadcasting them per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-add
   */
  add(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.12 sub --------------------------------------------------------------------------------

  /**
   * Subtracts `b` from `a` element-wise, broadcasting them per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-sub
   */
  sub(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.12 mul --------------------------------------------------------------------------------

  /**
   * Multiplies two tensors element-wise, broadcasting them per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-mul
   */
  mul(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.12 div --------------------------------------------------------------------------------

  /**
   * Divides `a` by `b` element-wise, broadcasting them per the numpy rule.
   *
   * @param a - The dividend.
   * @param b - The divisor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-div
   */
  div(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.12 max --------------------------------------------------------------------------------

  /**
   * Takes the element-wise maximum of two tensors, broadcasting them per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-max
   */
  max(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.12 min --------------------------------------------------------------------------------

  /**
   * Takes the element-wise minimum of two tensors, broadcasting them per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-min
   */
  min(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.12 pow --------------------------------------------------------------------------------

  /**
   * Raises `a` to the power `b` element-wise, broadcasting them per the numpy rule.
   *
   * @param a - The base.
   * @param b - The exponent, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-pow
   */
  pow(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.13 equal ------------------------------------------------------------------------------

  /**
   * Compares `a == b` element-wise, broadcasting per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-equal
   */
  equal(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.13 greater ----------------------------------------------------------------------------

  /**
   * Compares `a > b` element-wise, broadcasting per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-greater
   */
  greater(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.13 greaterOrEqual ---------------------------------------------------------------------

  /**
   * Compares `a >= b` element-wise, broadcasting per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-greaterorequal
   */
  greaterOrEqual(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.13 lesser -----------------------------------------------------------------------------

  /**
   * Compares `a < b` element-wise, broadcasting per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-lesser
   */
  lesser(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.13 lesserOrEqual ----------------------------------------------------------------------

  /**
   * Compares `a <= b` element-wise, broadcasting per the numpy rule.
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-lesserorequal
   */
  lesserOrEqual(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // notEqual ----------------------------------------------------------------------------------

  /**
   * Compares `a != b` element-wise, broadcasting per the numpy rule (NaN is unequal to
   * everything, itself included).
   *
   * @param a - The first tensor.
   * @param b - The second tensor, of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-notequal
   */
  notEqual(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // logicalAnd --------------------------------------------------------------------------------

  /**
   * Computes the logical AND of two `"uint8"` tensors element-wise (nonzero is true),
   * broadcasting per the numpy rule.
   *
   * @param a - A `"uint8"` tensor.
   * @param b - A `"uint8"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-logicaland
   */
  logicalAnd(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // logicalOr ---------------------------------------------------------------------------------

  /**
   * Computes the logical OR of two `"uint8"` tensors element-wise (nonzero is true),
   * broadcasting per the numpy rule.
   *
   * @param a - A `"uint8"` tensor.
   * @param b - A `"uint8"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-logicalor
   */
  logicalOr(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // logicalXor --------------------------------------------------------------------------------

  /**
   * Computes the logical XOR of two `"uint8"` tensors element-wise (nonzero is true),
   * broadcasting per the numpy rule.
   *
   * @param a - A `"uint8"` tensor.
   * @param b - A `"uint8"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of the broadcast shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-logicalxor
   */
  logicalXor(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 abs --------------------------------------------------------------------------------

  /**
   * Computes the absolute value element-wise.
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"` or `"int8"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-abs
   */
  abs(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 ceil -------------------------------------------------------------------------------

  /**
   * Rounds up to an integral value element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-ceil
   */
  ceil(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 cos --------------------------------------------------------------------------------

  /**
   * Computes the cosine element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-cos
   */
  cos(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 erf --------------------------------------------------------------------------------

  /**
   * Computes the Gauss error function element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-erf
   */
  erf(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 exp --------------------------------------------------------------------------------

  /**
   * Computes the natural exponential element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-exp
   */
  exp(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 floor ------------------------------------------------------------------------------

  /**
   * Rounds down to an integral value element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-floor
   */
  floor(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 identity ---------------------------------------------------------------------------

  /**
   * Copies the input; useful to output an input or a constant from a graph.
   *
   * @param input - A tensor of any data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor equal to the input.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-identity
   */
  identity(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 log --------------------------------------------------------------------------------

  /**
   * Computes the natural logarithm element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-log
   */
  log(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 neg --------------------------------------------------------------------------------

  /**
   * Negates element-wise.
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"` or `"int8"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-neg
   */
  neg(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 reciprocal -------------------------------------------------------------------------

  /**
   * Computes the reciprocal `1 / x` element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reciprocal
   */
  reciprocal(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 sin --------------------------------------------------------------------------------

  /**
   * Computes the sine element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-sin
   */
  sin(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 sqrt -------------------------------------------------------------------------------

  /**
   * Computes the square root element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-sqrt
   */
  sqrt(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.14 tan --------------------------------------------------------------------------------

  /**
   * Computes the tangent element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-tan
   */
  tan(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.13 not --------------------------------------------------------------------------------

  /**
   * Computes the logical negation of a `"uint8"` tensor element-wise (0 becomes 1, anything
   * else 0).
   *
   * @param a - The `"uint8"` input tensor.
   * @returns A `"uint8"` tensor of 0 and 1, of `a`'s shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-not
   */
  not(a: MLOperand): MLOperand;

  // 7.8.35 relu -------------------------------------------------------------------------------

  /**
   * Computes the rectified linear function `max(0, x)` element-wise.
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"` or `"int8"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-relu
   */
  relu(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  /**
   * Creates a ReLU activation for the recurrent operators.
   *
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-relu
   */
  relu(): MLActivation;

  // 7.8.38 sigmoid ----------------------------------------------------------------------------

  /**
   * Computes the sigmoid `1 / (1 + exp(-x))` element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-sigmoid
   */
  sigmoid(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  /**
   * Creates a sigmoid activation for the recurrent operators.
   *
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-sigmoid
   */
  sigmoid(): MLActivation;

  // 7.8.44 tanh -------------------------------------------------------------------------------

  /**
   * Computes the hyperbolic tangent element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-tanh
   */
  tanh(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  /**
   * Creates a hyperbolic tangent activation for the recurrent operators.
   *
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-tanh
   */
  tanh(): MLActivation;

  // isNaN -------------------------------------------------------------------------------------

  /**
   * Tests element-wise whether a value is NaN.
   *
   * @param a - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of `a`'s shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-isnan
   */
  isNaN(a: MLOperand, options?: MLOperatorOptions): MLOperand;

  // isInfinite --------------------------------------------------------------------------------

  /**
   * Tests element-wise whether a value is +Infinity or -Infinity.
   *
   * @param a - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of `a`'s shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-isinfinite
   */
  isInfinite(a: MLOperand, options?: MLOperatorOptions): MLOperand;

  // roundEven ---------------------------------------------------------------------------------

  /**
   * Rounds to the nearest integral value element-wise, halfway cases to the even one (2.5 gives
   * 2, -0.5 gives -0).
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-roundeven
   */
  roundEven(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // sign --------------------------------------------------------------------------------------

  /**
   * Computes the sign element-wise: -1, 0 or 1 (both zeros give +0; NaN gives NaN).
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"`, `"int64"` or `"int8"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-sign
   */
  sign(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  // logicalNot --------------------------------------------------------------------------------

  /**
   * Computes the logical negation of a `"uint8"` tensor element-wise (0 becomes 1, anything
   * else 0); the current draft's name of `not()`.
   *
   * @param a - The `"uint8"` input tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A `"uint8"` tensor of 0 and 1, of `a`'s shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-logicalnot
   */
  logicalNot(a: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.7 cast --------------------------------------------------------------------------------

  /**
   * Casts each element of the input to another data type.
   *
   * @param input - The input tensor.
   * @param type - The target data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type `type`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-cast
   */
  cast(input: MLOperand, type: MLOperandDataType, options?: MLOperatorOptions): MLOperand;

  // 7.8.8 clamp -------------------------------------------------------------------------------

  /**
   * Clamps the input element-wise to the range [minValue, maxValue].
   *
   * @param input - The input tensor.
   * @param options - See `MLClampOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-clamp
   */
  clamp(input: MLOperand, options?: MLClampOptions): MLOperand;

  /**
   * Creates a clamp activation for the recurrent operators.
   *
   * @param options - See `MLClampOptions`.
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-clamp
   */
  clamp(options?: MLClampOptions): MLActivation;

  // 7.8.47 where ------------------------------------------------------------------------------

  /**
   * Selects element-wise from `trueValue` where `condition` is non-zero and from `falseValue`
   * elsewhere, broadcasting all three per the numpy rule. (The CRD named them `input` and
   * `other`.)
   *
   * @param condition - A `"uint8"` tensor, typically the result of a logical operation.
   * @param trueValue - The values selected where the condition is true.
   * @param falseValue - The values selected where the condition is false, of `trueValue`'s data
   * type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape and `trueValue`'s data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-where
   */
  where(condition: MLOperand, trueValue: MLOperand, falseValue: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.37 reshape ----------------------------------------------------------------------------

  /**
   * Gives the input a new shape with the same number of elements, without changing its data.
   *
   * @param input - The input tensor.
   * @param newShape - The new shape; `[]` makes a scalar.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of shape `newShape` and the input's data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reshape
   */
  reshape(input: MLOperand, newShape: number[], options?: MLOperatorOptions): MLOperand;

  // 7.8.45 transpose --------------------------------------------------------------------------

  /**
   * Permutes the dimensions of the input; by default reverses them.
   *
   * @param input - The input tensor.
   * @param options - See `MLTransposeOptions`.
   * @returns The permuted tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-transpose
   */
  transpose(input: MLOperand, options?: MLTransposeOptions): MLOperand;

  // 7.8.9 concat ------------------------------------------------------------------------------

  /**
   * Concatenates tensors along an axis.
   *
   * @param inputs - The tensors: same data type, same rank, same sizes except along `axis`.
   * @param axis - The axis to concatenate along, below the inputs' rank.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor whose size along `axis` is the sum of the inputs' sizes.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-concat
   */
  concat(inputs: MLOperand[], axis: number, options?: MLOperatorOptions): MLOperand;

  // 7.8.39 slice ------------------------------------------------------------------------------

  /**
   * Extracts a slice of the input: `sizes[d]` elements from `starts[d]` in each dimension d.
   *
   * @param input - The input tensor.
   * @param starts - The starting index in each dimension (one per dimension).
   * @param sizes - The number of elements in each dimension (one per dimension, non-zero).
   * @param options - See `MLSliceOptions`.
   * @returns A tensor of shape `sizes` (with strides: `ceil(sizes[d] / strides[d])` in each
   * dimension d) and the input's data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-slice
   */
  slice(input: MLOperand, starts: number[], sizes: number[], options?: MLSliceOptions): MLOperand;

  // 7.8.43 split ------------------------------------------------------------------------------

  /**
   * Splits the input along an axis into equal parts (`splits` a number) or parts of the given
   * sizes (`splits` a list).
   *
   * @param input - The input tensor.
   * @param splits - The number of equal parts, or the size of each part along the axis.
   * @param options - See `MLSplitOptions`.
   * @returns The parts, in order along the axis.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-split
   */
  split(input: MLOperand, splits: number | number[], options?: MLSplitOptions): MLOperand[];

  // 7.8.16 expand -----------------------------------------------------------------------------

  /**
   * Broadcasts the input to a new shape: each input dimension must be 1 or equal to the
   * corresponding (trailing-aligned) dimension of `newShape`.
   *
   * @param input - The input tensor.
   * @param newShape - The target shape.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the broadcast shape and the input's data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-expand
   */
  expand(input: MLOperand, newShape: number[], options?: MLOperatorOptions): MLOperand;

  // 7.8.15 elu --------------------------------------------------------------------------------

  /**
   * Computes the exponential linear unit `max(0, x) + alpha * (exp(min(0, x)) - 1)`
   * element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - See `MLEluOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-elu
   */
  elu(input: MLOperand, options?: MLEluOptions): MLOperand;

  /**
   * Creates an ELU activation for the recurrent operators.
   *
   * @param options - See `MLEluOptions`.
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-elu
   */
  elu(options?: MLEluOptions): MLActivation;

  // 7.8.18 gelu -------------------------------------------------------------------------------

  /**
   * Computes the Gaussian error linear unit `0.5 * x * (1 + erf(x / sqrt(2)))` element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-gelu
   */
  gelu(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  /**
   * Creates a GELU activation for the recurrent operators.
   *
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-gelu
   */
  gelu(): MLActivation;

  // 7.8.22 hardSigmoid ------------------------------------------------------------------------

  /**
   * Computes the hard sigmoid `max(0, min(1, alpha * x + beta))` element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - See `MLHardSigmoidOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-hardsigmoid
   */
  hardSigmoid(input: MLOperand, options?: MLHardSigmoidOptions): MLOperand;

  /**
   * Creates a hard sigmoid activation for the recurrent operators.
   *
   * @param options - See `MLHardSigmoidOptions`.
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-hardsigmoid
   */
  hardSigmoid(options?: MLHardSigmoidOptions): MLActivation;

  // 7.8.23 hardSwish --------------------------------------------------------------------------

  /**
   * Computes the hard swish `x * max(0, min(6, x + 3)) / 6` [MobileNetV3] element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-hardswish
   */
  hardSwish(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  /**
   * Creates a hard swish activation for the recurrent operators.
   *
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-hardswish
   */
  hardSwish(): MLActivation;

  // 7.8.26 leakyRelu --------------------------------------------------------------------------

  /**
   * Computes the leaky rectified linear function `max(0, x) + alpha * min(0, x)` element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - See `MLLeakyReluOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-leakyrelu
   */
  leakyRelu(input: MLOperand, options?: MLLeakyReluOptions): MLOperand;

  /**
   * Creates a leaky ReLU activation for the recurrent operators.
   *
   * @param options - See `MLLeakyReluOptions`.
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-leakyrelu
   */
  leakyRelu(options?: MLLeakyReluOptions): MLActivation;

  // 7.8.27 linear -----------------------------------------------------------------------------

  /**
   * Computes the linear function `alpha * x + beta` element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - See `MLLinearOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-linear
   */
  linear(input: MLOperand, options?: MLLinearOptions): MLOperand;

  /**
   * Creates a linear activation for the recurrent operators.
   *
   * @param options - See `MLLinearOptions`.
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-linear
   */
  linear(options?: MLLinearOptions): MLActivation;

  // 7.8.41 softplus ---------------------------------------------------------------------------

  /**
   * Computes the softplus `ln(1 + exp(x))` element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-softplus
   */
  softplus(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  /**
   * Creates a softplus activation for the recurrent operators.
   *
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-softplus
   */
  softplus(): MLActivation;

  // 7.8.42 softsign ---------------------------------------------------------------------------

  /**
   * Computes the softsign `x / (1 + |x|)` element-wise.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-softsign
   */
  softsign(input: MLOperand, options?: MLOperatorOptions): MLOperand;

  /**
   * Creates a softsign activation for the recurrent operators.
   *
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-softsign
   */
  softsign(): MLActivation;

  // 7.8.33 prelu ------------------------------------------------------------------------------

  /**
   * Computes the parametric rectified linear function `max(0, x) + slope * min(0, x)`
   * element-wise, with a learned slope tensor.
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"` or `"int8"` tensor.
   * @param slope - The slope, of the input's data type, unidirectionally broadcastable to the
   * input's shape.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-prelu
   */
  prelu(input: MLOperand, slope: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.40 softmax ----------------------------------------------------------------------------

  /**
   * Computes the softmax of the input along an axis.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param axis - The axis along which the softmax is computed, below the input's rank.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-softmax
   */
  softmax(input: MLOperand, axis: number, options?: MLOperatorOptions): MLOperand;

  /**
   * Creates a softmax activation for the recurrent operators; a recurrent operator throws a
   * `TypeError` when `axis` is not below the rank of its gate tensors.
   *
   * @param axis - The axis along which the softmax is computed.
   * @returns The activation.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-softmax
   */
  softmax(axis: number): MLActivation;

  // 7.8.30 matmul -----------------------------------------------------------------------------

  /**
   * Computes the matrix product of the last two dimensions of two tensors, broadcasting the
   * leading (batch) dimensions per the numpy rule. Throws a TypeError if `a` is not floating
   * point, `b` has another data type, either rank is below 2, the inner dimensions differ, or
   * the batch dimensions cannot be broadcast together.
   *
   * @param a - A tensor of rank 2 or more [..., M, K] (`"float32"` or `"float16"`).
   * @param b - A tensor of rank 2 or more [..., K, N], of `a`'s data type.
   * @param options - `label`, quoted in error messages.
   * @returns The [...broadcast batch, M, N] product.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-matmul
   */
  matmul(a: MLOperand, b: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.19 gemm -------------------------------------------------------------------------------

  /**
   * Computes the general matrix multiplication `alpha * A * B + beta * C` of 2-D tensors, where
   * A is [M, K] (or [K, M] with aTranspose) and B is [K, N] (or [N, K] with bTranspose). Throws
   * a TypeError if `a` is not floating point, `b` or `c` has another data type, `a` or `b` is
   * not 2-D, the inner dimensions differ, or `c` is not broadcastable to [M, N].
   *
   * @param a - The 2-D first matrix (`"float32"` or `"float16"`).
   * @param b - The 2-D second matrix, of `a`'s data type.
   * @param options - See `MLGemmOptions`.
   * @returns The 2-D [M, N] tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-gemm
   */
  gemm(a: MLOperand, b: MLOperand, options?: MLGemmOptions): MLOperand;

  // 7.8.10 conv2d -----------------------------------------------------------------------------

  /**
   * Computes a 2-D convolution of a 4-D input with a 4-D filter. The output spatial size is
   * `floor(1 + (inputSize - (filterSize - 1) * dilation - 1 + beginningPadding + endingPadding)
   * / stride)`. Throws a TypeError if the input is not floating point or not 4-D, the filter is
   * not 4-D or has another data type, padding is not of length 4, strides or dilations not of
   * length 2, a stride, a dilation or `groups` is 0, the input channels are not divisible by
   * `groups` or do not match the filter's input channels, the output channels are not divisible
   * by `groups`, the bias is not of shape [outputChannels] and the input's data type, or an
   * output dimension is not valid (the dilated filter is larger than the padded input).
   *
   * @param input - The 4-D input tensor (`"float32"` or `"float16"`), laid out per
   * `options.inputLayout`.
   * @param filter - The 4-D filter tensor, laid out per `options.filterLayout`.
   * @param options - See `MLConv2dOptions`.
   * @returns The 4-D output tensor, laid out per `options.inputLayout`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-conv2d
   */
  conv2d(input: MLOperand, filter: MLOperand, options?: MLConv2dOptions): MLOperand;

  // 7.8.11 convTranspose2d --------------------------------------------------------------------

  /**
   * Computes a 2-D transposed convolution of a 4-D input with a 4-D filter. Unless
   * `outputSizes` is given, the output spatial size is `(inputSize - 1) * stride + (filterSize
   * - 1) * dilation + 1 - beginningPadding - endingPadding + outputPadding`. Throws a TypeError
   * if the input is not floating point or not 4-D, the filter is not 4-D or has another data
   * type, padding is not of length 4, strides, dilations, outputPadding or outputSizes not of
   * length 2, a stride, a dilation or `groups` is 0, an output padding is not smaller than its
   * stride (when outputSizes is absent), an output size is outside [computed size, computed
   * size + stride) (when outputSizes is given), the input channels do not match the filter's or
   * are not divisible by `groups`, the bias is not of shape [outputChannels] and the input's
   * data type, or an output dimension is not valid.
   *
   * @param input - The 4-D input tensor (`"float32"` or `"float16"`), laid out per
   * `options.inputLayout`.
   * @param filter - The 4-D filter tensor, laid out per `options.filterLayout`.
   * @param options - See `MLConvTranspose2dOptions`.
   * @returns The 4-D output tensor, laid out per `options.inputLayout`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-convtranspose2d
   */
  convTranspose2d(input: MLOperand, filter: MLOperand, options?: MLConvTranspose2dOptions): MLOperand;

  // 7.8.32 averagePool2d ----------------------------------------------------------------------

  /**
   * Computes the average of each window of the input's spatial dimensions.
   *
   * @param input - The 4-D input tensor, in `options.layout`.
   * @param options - See `MLPool2dOptions`.
   * @returns The 4-D pooled tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-averagepool2d
   */
  averagePool2d(input: MLOperand, options?: MLPool2dOptions): MLOperand;

  // 7.8.32 l2Pool2d ---------------------------------------------------------------------------

  /**
   * Computes the L2 norm (square root of the sum of squares) of each window of the input's
   * spatial dimensions.
   *
   * @param input - The 4-D input tensor, in `options.layout`.
   * @param options - See `MLPool2dOptions`.
   * @returns The 4-D pooled tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-l2pool2d
   */
  l2Pool2d(input: MLOperand, options?: MLPool2dOptions): MLOperand;

  // 7.8.32 maxPool2d --------------------------------------------------------------------------

  /**
   * Computes the maximum of each window of the input's spatial dimensions.
   *
   * @param input - The 4-D input tensor, in `options.layout`.
   * @param options - See `MLPool2dOptions`.
   * @returns The 4-D pooled tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-maxpool2d
   */
  maxPool2d(input: MLOperand, options?: MLPool2dOptions): MLOperand;

  // 7.8.6 batchNormalization ------------------------------------------------------------------

  /**
   * Normalizes the input with precomputed per-feature mean and variance: `scale * (input -
   * mean) / sqrt(variance + epsilon) + bias`.
   *
   * @param input - The N-D input tensor (`"float32"` or `"float16"`).
   * @param mean - The 1-D mean tensor of shape [input.shape[axis]].
   * @param variance - The 1-D variance tensor of shape [input.shape[axis]].
   * @param options - See `MLBatchNormalizationOptions`.
   * @returns The normalized tensor, of the input's shape and type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-batchnormalization
   */
  batchNormalization(input: MLOperand, mean: MLOperand, variance: MLOperand, options?: MLBatchNormalizationOptions): MLOperand;

  // 7.8.24 instanceNormalization --------------------------------------------------------------

  /**
   * Normalizes each channel of each batch over its spatial dimensions: `scale * (input - mean)
   * / sqrt(variance + epsilon) + bias`.
   *
   * @param input - The 4-D input tensor (`"float32"` or `"float16"`).
   * @param options - See `MLInstanceNormalizationOptions`.
   * @returns The normalized tensor, of the input's shape and type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-instancenormalization
   */
  instanceNormalization(input: MLOperand, options?: MLInstanceNormalizationOptions): MLOperand;

  // 7.8.25 layerNormalization -----------------------------------------------------------------

  /**
   * Normalizes the input over the given axes: `scale * (input - mean) / sqrt(variance +
   * epsilon) + bias`.
   *
   * @param input - The N-D input tensor (`"float32"` or `"float16"`).
   * @param options - See `MLLayerNormalizationOptions`.
   * @returns The normalized tensor, of the input's shape and type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-layernormalization
   */
  layerNormalization(input: MLOperand, options?: MLLayerNormalizationOptions): MLOperand;

  // 7.8.34 reduceL1 ---------------------------------------------------------------------------

  /**
   * Reduces by the sum of absolute values. Throws a TypeError if the input's data type is not
   * float32, float16, int32 or uint32, or an axis is out of range or repeated.
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"` or `"uint32"` tensor.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducel1
   */
  reduceL1(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceL2 ---------------------------------------------------------------------------

  /**
   * Reduces by the square root of the sum of squares. Throws a TypeError if the input is not
   * floating point, or an axis is out of range or repeated.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducel2
   */
  reduceL2(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceLogSum -----------------------------------------------------------------------

  /**
   * Reduces by the natural logarithm of the sum. Throws a TypeError if the input is not
   * floating point, or an axis is out of range or repeated.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducelogsum
   */
  reduceLogSum(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceLogSumExp --------------------------------------------------------------------

  /**
   * Reduces by the natural logarithm of the sum of exponentials. Throws a TypeError if the
   * input is not floating point, or an axis is out of range or repeated.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducelogsumexp
   */
  reduceLogSumExp(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceMax --------------------------------------------------------------------------

  /**
   * Reduces by the maximum. Throws a TypeError if an axis is out of range or repeated.
   *
   * @param input - A tensor of any data type.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducemax
   */
  reduceMax(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceMean -------------------------------------------------------------------------

  /**
   * Reduces by the arithmetic mean. Throws a TypeError if the input is not floating point, or
   * an axis is out of range or repeated.
   *
   * @param input - A `"float32"` or `"float16"` tensor.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducemean
   */
  reduceMean(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceMin --------------------------------------------------------------------------

  /**
   * Reduces by the minimum. Throws a TypeError if an axis is out of range or repeated.
   *
   * @param input - A tensor of any data type.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducemin
   */
  reduceMin(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceProduct ----------------------------------------------------------------------

  /**
   * Reduces by the product. Throws a TypeError if the input's data type is not float32,
   * float16, int32 or uint32, or an axis is out of range or repeated.
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"` or `"uint32"` tensor.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reduceproduct
   */
  reduceProduct(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceSum --------------------------------------------------------------------------

  /**
   * Reduces by the sum. Throws a TypeError if the input's data type is not float32, float16,
   * int32 or uint32, or an axis is out of range or repeated.
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"` or `"uint32"` tensor.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducesum
   */
  reduceSum(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.34 reduceSumSquare --------------------------------------------------------------------

  /**
   * Reduces by the sum of squares. Throws a TypeError if the input's data type is not float32,
   * float16, int32 or uint32, or an axis is out of range or repeated.
   *
   * @param input - A `"float32"`, `"float16"`, `"int32"` or `"uint32"` tensor.
   * @param options - See `MLReduceOptions`.
   * @returns The reduced tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reducesumsquare
   */
  reduceSumSquare(input: MLOperand, options?: MLReduceOptions): MLOperand;

  // 7.8.5 argMin ------------------------------------------------------------------------------

  /**
   * Returns the indices of the minimum values along the given axes. Throws a TypeError if an
   * axis is out of range or repeated.
   *
   * @param input - The input tensor.
   * @param options - See `MLArgMinMaxOptions`.
   * @returns An `"int64"` tensor of the reduced shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-argmin
   */
  argMin(input: MLOperand, options?: MLArgMinMaxOptions): MLOperand;

  /**
   * The current draft's form: the index of the minimum along `axis`, as
   * `options.outputDataType` (`"int32"`, the default, or `"int64"`).
   *
   * @param input - The input tensor.
   * @param axis - The dimension to reduce, in the range [0, N-1] where N is the input's rank.
   * @param options - See `MLArgMinMaxOptions`.
   * @returns A tensor of the reduced shape and `options.outputDataType`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-argmin
   */
  argMin(input: MLOperand, axis: number, options?: MLArgMinMaxOptions): MLOperand;

  // 7.8.5 argMax ------------------------------------------------------------------------------

  /**
   * Returns the indices of the maximum values along the given axes. Throws a TypeError if an
   * axis is out of range or repeated.
   *
   * @param input - The input tensor.
   * @param options - See `MLArgMinMaxOptions`.
   * @returns An `"int64"` tensor of the reduced shape.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-argmax
   */
  argMax(input: MLOperand, options?: MLArgMinMaxOptions): MLOperand;

  /**
   * The current draft's form: the index of the maximum along `axis`, as
   * `options.outputDataType` (`"int32"`, the default, or `"int64"`).
   *
   * @param input - The input tensor.
   * @param axis - The dimension to reduce, in the range [0, N-1] where N is the input's rank.
   * @param options - See `MLArgMinMaxOptions`.
   * @returns A tensor of the reduced shape and `options.outputDataType`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-argmax
   */
  argMax(input: MLOperand, axis: number, options?: MLArgMinMaxOptions): MLOperand;

  // 7.8.17 gather -----------------------------------------------------------------------------

  /**
   * Gathers slices of the input along an axis at the given indices. Throws a TypeError if the
   * indices' data type is not `"int32"`, `"uint32"` or `"int64"`, or `axis` is not below the
   * input's rank.
   *
   * @param input - The input tensor.
   * @param indices - An `"int32"`, `"uint32"` or `"int64"` tensor of indices into `input`'s
   * dimension `axis`, of size n. A negative index counts from the end (i + n); an index still
   * outside [0, n-1] is clamped into it at run time (as Chromium's CPU backends do).
   * @param options - See `MLGatherOptions`.
   * @returns A tensor of rank input rank + indices rank - 1: input.shape()[0..axis) ++
   * indices.shape() ++ input.shape()(axis..).
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-gather
   */
  gather(input: MLOperand, indices: MLOperand, options?: MLGatherOptions): MLOperand;

  // 7.8.31 pad --------------------------------------------------------------------------------

  /**
   * Pads the edges of the input with a constant or with mirrored or repeated values; each
   * output dimension is beginningPadding + input size + endingPadding. Throws a TypeError if
   * either padding list's length is not the input's rank, an output dimension is not valid, or
   * (as in Chromium) a padding exceeds size - 1 in mode `"reflection"` or size in mode
   * `"symmetric"`.
   *
   * @param input - The input tensor.
   * @param beginningPadding - The padding at the beginning of each dimension (one per
   * dimension).
   * @param endingPadding - The padding at the end of each dimension (one per dimension).
   * @param options - See `MLPadOptions`.
   * @returns The padded tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-pad
   */
  pad(input: MLOperand, beginningPadding: number[], endingPadding: number[], options?: MLPadOptions): MLOperand;

  // 7.8.36 resample2d -------------------------------------------------------------------------

  /**
   * Resamples two consecutive dimensions of a 4-D tensor to new sizes by scales or target
   * sizes. Throws a TypeError if the input is not floating point or not 4-D, scales or sizes is
   * not of length 2 or holds a value not greater than 0, axes is not [0, 1], [1, 2] or [2, 3],
   * or an output dimension is not valid.
   *
   * @param input - The 4-D input tensor (`"float32"` or `"float16"`).
   * @param options - See `MLResample2dOptions`.
   * @returns The resampled 4-D tensor.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-resample2d
   */
  resample2d(input: MLOperand, options?: MLResample2dOptions): MLOperand;

  // 7.8.46 triangular -------------------------------------------------------------------------

  /**
   * Keeps the upper or lower triangular part of a matrix (or of each matrix of the last two
   * dimensions) and zeroes the rest. Throws a TypeError if the input's rank is below 2.
   *
   * @param input - A tensor of rank 2 or more.
   * @param options - See `MLTriangularOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-triangular
   */
  triangular(input: MLOperand, options?: MLTriangularOptions): MLOperand;

  // gatherElements ----------------------------------------------------------------------------

  /**
   * ONNX GatherElements: output[c] = input[c with c[axis] replaced by indices[c]]. Throws a
   * TypeError for a rank-0 input, another rank of indices, a dimension of indices larger than
   * the input's (other than `axis`), an index data type not listed, or `axis` not below the
   * input's rank.
   *
   * @param input - The input tensor, of any data type.
   * @param indices - Of the input's rank, no larger than the input in any dimension but `axis`.
   * @param options - See `MLGatherOptions`.
   * @returns A tensor of the indices' shape and the input's data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-gatherelements
   */
  gatherElements(input: MLOperand, indices: MLOperand, options?: MLGatherOptions): MLOperand;

  // gatherND ----------------------------------------------------------------------------------

  /**
   * ONNX GatherND (batch_dims 0): each row of the last dimension of indices (k values, 1 <= k
   * <= input rank) addresses a slice input[i0, .., ik-1]. Throws a TypeError for rank-0 input
   * or indices, k outside [1, input rank], an index data type not listed, or an output of rank
   * above 8.
   *
   * @param input - The input tensor, of any data type.
   * @param indices - An `"int32"`, `"uint32"` or `"int64"` tensor of index tuples along its
   * last dimension.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of shape indices.shape[0..-1] ++ input.shape[k..].
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-gathernd
   */
  gatherND(input: MLOperand, indices: MLOperand, options?: MLOperatorOptions): MLOperand;

  // scatterElements ---------------------------------------------------------------------------

  /**
   * ONNX ScatterElements without reduction: the input with updates[c] written at c with c[axis]
   * replaced by indices[c]. Where indices repeat, the update last in row-major order wins.
   *
   * @param input - The input tensor, of any data type.
   * @param indices - As for gatherElements().
   * @param updates - Of the indices' shape and the input's data type.
   * @param options - See `MLScatterOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-scatterelements
   */
  scatterElements(input: MLOperand, indices: MLOperand, updates: MLOperand, options?: MLScatterOptions): MLOperand;

  // scatterND ---------------------------------------------------------------------------------

  /**
   * ONNX ScatterND without reduction: the input with each slice addressed by a row of indices
   * (as in gatherND) replaced by the matching slice of updates. Where rows repeat, the row last
   * in order wins.
   *
   * @param input - The input tensor, of any data type.
   * @param indices - An `"int32"`, `"uint32"` or `"int64"` tensor of index tuples along its
   * last dimension.
   * @param updates - Of shape indices.shape[0..-1] ++ input.shape[k..] and the input's data
   * type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-scatternd
   */
  scatterND(input: MLOperand, indices: MLOperand, updates: MLOperand, options?: MLOperatorOptions): MLOperand;

  // 7.8.20 gru --------------------------------------------------------------------------------

  /**
   * Runs a Gated Recurrent Unit [GRU] network over a sequence.
   *
   * @param input - The 3-D input tensor [steps, batchSize, inputSize] (`"float32"` or
   * `"float16"`).
   * @param weight - The 3-D input weight tensor [numDirections, 3 * hiddenSize, inputSize].
   * @param recurrentWeight - The 3-D recurrent weight tensor [numDirections, 3 * hiddenSize,
   * hiddenSize].
   * @param steps - The number of time steps; must equal input.shape()[0].
   * @param hiddenSize - The size of the hidden state.
   * @param options - See `MLGruOptions`.
   * @returns `[output]`, or `[output, sequence]` when `returnSequence` is true: `output` is the
   * 3-D [numDirections, batchSize, hiddenSize] hidden state of the last step, `sequence` the
   * 4-D [steps, numDirections, batchSize, hiddenSize] outputs of every step.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-gru
   */
  gru(input: MLOperand, weight: MLOperand, recurrentWeight: MLOperand, steps: number, hiddenSize: number, options?: MLGruOptions): MLOperand[];

  // 7.8.21 gruCell ----------------------------------------------------------------------------

  /**
   * Computes a single time step of a Gated Recurrent Unit [GRU] network.
   *
   * @param input - The 2-D input tensor [batchSize, inputSize] (`"float32"` or `"float16"`).
   * @param weight - The 2-D input weight tensor [3 * hiddenSize, inputSize].
   * @param recurrentWeight - The 2-D recurrent weight tensor [3 * hiddenSize, hiddenSize].
   * @param hiddenState - The 2-D hidden state [batchSize, hiddenSize].
   * @param hiddenSize - The size of the hidden state.
   * @param options - See `MLGruCellOptions`.
   * @returns The 2-D [batchSize, hiddenSize] new hidden state.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-grucell
   */
  gruCell(input: MLOperand, weight: MLOperand, recurrentWeight: MLOperand, hiddenState: MLOperand, hiddenSize: number, options?: MLGruCellOptions): MLOperand;

  // 7.8.28 lstm -------------------------------------------------------------------------------

  /**
   * Runs a Long Short-Term Memory [LSTM] network over a sequence.
   *
   * @param input - The 3-D input tensor [steps, batchSize, inputSize] (`"float32"` or
   * `"float16"`).
   * @param weight - The 3-D input weight tensor [numDirections, 4 * hiddenSize, inputSize].
   * @param recurrentWeight - The 3-D recurrent weight tensor [numDirections, 4 * hiddenSize,
   * hiddenSize].
   * @param steps - The number of time steps; must equal input.shape()[0].
   * @param hiddenSize - The size of the hidden state.
   * @param options - See `MLLstmOptions`.
   * @returns `[hidden, cell]`, or `[hidden, cell, sequence]` when `returnSequence` is true:
   * `hidden` and `cell` are the 3-D [numDirections, batchSize, hiddenSize] states of the last
   * step, `sequence` the 4-D [steps, numDirections, batchSize, hiddenSize] outputs of every
   * step.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-lstm
   */
  lstm(input: MLOperand, weight: MLOperand, recurrentWeight: MLOperand, steps: number, hiddenSize: number, options?: MLLstmOptions): MLOperand[];

  // 7.8.29 lstmCell ---------------------------------------------------------------------------

  /**
   * Computes a single time step of a Long Short-Term Memory [LSTM] network.
   *
   * @param input - The 2-D input tensor [batchSize, inputSize] (`"float32"` or `"float16"`).
   * @param weight - The 2-D input weight tensor [4 * hiddenSize, inputSize].
   * @param recurrentWeight - The 2-D recurrent weight tensor [4 * hiddenSize, hiddenSize].
   * @param hiddenState - The 2-D hidden state [batchSize, hiddenSize].
   * @param cellState - The 2-D cell state [batchSize, hiddenSize].
   * @param hiddenSize - The size of the hidden state.
   * @param options - See `MLLstmCellOptions`.
   * @returns `[hidden, cell]`: the new 2-D [batchSize, hiddenSize] hidden and cell states.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-lstmcell
   */
  lstmCell(input: MLOperand, weight: MLOperand, recurrentWeight: MLOperand, hiddenState: MLOperand, cellState: MLOperand, hiddenSize: number, options?: MLLstmCellOptions): MLOperand[];

  // reverse -----------------------------------------------------------------------------------

  /**
   * Reverses the order of the elements along the given axes. Throws a TypeError if an axis is
   * out of range or listed twice.
   *
   * @param input - A tensor of any data type, rank 0 to 8.
   * @param options - See `MLReverseOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-reverse
   */
  reverse(input: MLOperand, options?: MLReverseOptions): MLOperand;

  // tile --------------------------------------------------------------------------------------

  /**
   * Repeats the input `repetitions[d]` times along each dimension d. Throws a TypeError if
   * repetitions' length differs from the rank, a count is 0, or the output is too large.
   *
   * @param input - A tensor of any data type, rank 0 to 8.
   * @param repetitions - One count (at least 1) per input dimension (`unsigned long`).
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's data type, dimension d being `input.shape[d] *
   * repetitions[d]`.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-tile
   */
  tile(input: MLOperand, repetitions: number[], options?: MLOperatorOptions): MLOperand;

  // cumulativeSum -----------------------------------------------------------------------------

  /**
   * Running sums along `axis` (ONNX CumSum). float16 sums in float32 and rounds each output
   * element once; int32 and int64 wrap on overflow.
   *
   * @param input - float32, float16, int32 or int64, rank 1 to 8.
   * @param axis - The axis to sum along, in [0, rank) (`unsigned long`).
   * @param options - See `MLCumulativeSumOptions`.
   * @returns A tensor of the input's shape and data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-cumulativesum
   */
  cumulativeSum(input: MLOperand, axis: number, options?: MLCumulativeSumOptions): MLOperand;

  // quantizeLinear ----------------------------------------------------------------------------

  /**
   * `saturate(roundEven(input / scale) + zeroPoint)`, with `scale` and `zeroPoint` broadcast
   * blockwise: of the input's rank, each input dimension a multiple of theirs, scale element `i
   * / (inputDim / scaleDim)` serving input element `i` in each dimension.
   *
   * @param input - float32 or float16, rank 0 to 8.
   * @param scale - The input's data type; the shape of zeroPoint.
   * @param zeroPoint - int8, uint8 or int32.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and zeroPoint's data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-quantizelinear
   */
  quantizeLinear(input: MLOperand, scale: MLOperand, zeroPoint: MLOperand, options?: MLOperatorOptions): MLOperand;

  // dequantizeLinear --------------------------------------------------------------------------

  /**
   * `(input - zeroPoint) * scale`, with `scale` and `zeroPoint` broadcast blockwise as in
   * `quantizeLinear`.
   *
   * @param input - int8, uint8 or int32, rank 0 to 8.
   * @param scale - float32 or float16; the shape of zeroPoint.
   * @param zeroPoint - The input's data type.
   * @param options - `label`, quoted in error messages.
   * @returns A tensor of the input's shape and scale's data type.
   * @see https://webmachinelearning.github.io/webnn/#api-mlgraphbuilder-dequantizelinear
   */
  dequantizeLinear(input: MLOperand, scale: MLOperand, zeroPoint: MLOperand, options?: MLOperatorOptions): MLOperand;
  // </operator-table: methods>
}

// ---------------------------------------------------------------------------------------------
// Module exports
// ---------------------------------------------------------------------------------------------

/**
 * The package's `ML` instance, the equivalent of a browser's `navigator.ml`.
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-ml
 */
export declare const ml: ML;

// Keep the helper types above module-private.
export {};
