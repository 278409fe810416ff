// ESM form of the opt-in polyfill entry: installs navigator.ml and the ML* globals.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const webnn = require('./polyfill.js')

export default webnn
