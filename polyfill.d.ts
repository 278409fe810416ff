/**
 * Globals installed by the opt-in entry `webnn-node/polyfill`
 * (`require('webnn-node/polyfill')` or `import 'webnn-node/polyfill'`): `navigator.ml` and the
 * classes `ML`, `MLContext`, `MLGraph`, `MLGraphBuilder`, `MLOperand`, `MLActivation`, `MLTensor`, `MLTensorUsage` and (where WebGPU is absent)
 * `GPUDevice`, so
 * code written for browsers (`navigator.ml.createContext()`, `new MLGraphBuilder(context)`) runs
 * unchanged. The entry exports nothing.
 *
 * The declarations merge with the DOM lib's `Navigator` and `navigator` where that lib is loaded,
 * and with `@types/node`'s `Navigator` (Node.js 21 and later have a global `navigator`).
 *
 * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-navigator-ml
 * @packageDocumentation
 */

import type * as webnn from "./index.js";

declare global {
  /**
   * The `navigator.ml` property of the spec's `NavigatorML` mixin, on the global navigator.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-navigator-ml
   */
  interface Navigator {
    /**
     * The `ML` entry point, the same object as the package's exported `ml`.
     * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-navigator-ml
     */
    readonly ml: webnn.ML;
  }

  /**
   * The global navigator; the polyfill creates it where the runtime has none and adds `ml` to it.
   * Declared with the same type as the DOM lib's and `@types/node`'s declaration, so they merge.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-navigator-ml
   */
  var navigator: Navigator;

  /**
   * The WebNN entry point type, as exported by `webnn-node`.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-ml
   */
  interface ML extends webnn.ML {}
  /**
   * The `ML` class (not constructible; use `navigator.ml`).
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-ml
   */
  var ML: typeof webnn.ML;

  /**
   * The execution context type, as exported by `webnn-node`.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlcontext
   */
  interface MLContext extends webnn.MLContext {}
  /**
   * The `MLContext` class (not constructible; use `navigator.ml.createContext()`).
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlcontext
   */
  var MLContext: typeof webnn.MLContext;

  /**
   * The compiled graph type, as exported by `webnn-node`.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraph
   */
  interface MLGraph extends webnn.MLGraph {}
  /**
   * The `MLGraph` class (not constructible; use `MLGraphBuilder.build()`).
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraph
   */
  var MLGraph: typeof webnn.MLGraph;

  /**
   * The graph builder type, as exported by `webnn-node`.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraphbuilder
   */
  interface MLGraphBuilder extends webnn.MLGraphBuilder {}
  /**
   * The `MLGraphBuilder` class: `new MLGraphBuilder(context)`.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlgraphbuilder-constructor
   */
  var MLGraphBuilder: typeof webnn.MLGraphBuilder;

  /**
   * The operand type, as exported by `webnn-node`.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mloperand
   */
  interface MLOperand extends webnn.MLOperand {}
  /**
   * The `MLOperand` class (not constructible; created by `MLGraphBuilder` methods).
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mloperand
   */
  var MLOperand: typeof webnn.MLOperand;

  /**
   * The activation type, as exported by `webnn-node`.
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlactivation
   */
  interface MLActivation extends webnn.MLActivation {}
  /**
   * The `MLActivation` class (not constructible; created by activation methods of `MLGraphBuilder`).
   * @see https://www.w3.org/TR/2024/CRD-webnn-20240515/#api-mlactivation
   */
  var MLActivation: typeof webnn.MLActivation;

  /** The tensor type of the current draft, as exported by `webnn-node`. */
  interface MLTensor extends webnn.MLTensor {}
  /** The `MLTensor` class (not constructible; created by `MLContext.createTensor()`). */
  var MLTensor: typeof webnn.MLTensor;
  /** An earlier draft's tensor usage flags, still used by ONNX Runtime Web 1.20-1.21. */
  var MLTensorUsage: typeof webnn.MLTensorUsage;
  /** Where the runtime has no WebGPU: a class without instances, for `instanceof` checks. */
  var GPUDevice: typeof webnn.GPUDevice;
}

export {};
