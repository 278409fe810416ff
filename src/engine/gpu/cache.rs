//! The GPU engine's on-disk pipeline cache.
//!
//! A context's compute pipelines are created through one `wgpu::PipelineCache`
//! (Vulkan's VkPipelineCache: the driver's compiled code), which starts from the
//! file an earlier process saved for the same adapter and driver, and is saved
//! again after every build that compiled new pipelines. A second process building
//! the same model then pays for translating the WGSL, not for the driver's
//! compiler. Where the backend has no pipeline cache (Metal, DX12) or the user
//! turned it off (`gpuCacheDirectory: ''`), nothing is read or written.
//!
//! File: `<dir>/gpu-pipelines-<vendor>-<device>-<hash>.bin`, the hash over the
//! adapter's name, driver and driver version and this package's version (wgpu's
//! data format may change between versions). Contents: an 8-byte magic, the data's
//! length and a 64-bit checksum of it (both little-endian), then wgpu's data. A
//! file that is short, too large, or fails its checksum is ignored (and replaced
//! at the next save); wgpu then checks its own header (adapter, driver) and the
//! driver its own. Saves write a temporary file beside it and rename it over, so
//! a reader never sees half a file; two processes saving at once leave one
//! process's cache, which the other's next save extends again.
//!
//! Must never: fail a build or a context because of the cache (any I/O error is
//! logged at `info` and the engine goes on without the file), or read more than
//! `MAX_BYTES` from disk.

use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::{log, LogLevel};

/// Where a context keeps its pipeline cache (`gpuCacheDirectory` of createContext).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDir {
    /// The platform's per-user cache directory, `webnn-node` in it.
    Default,
    /// No disk cache.
    Off,
    At(PathBuf),
}

impl CacheDir {
    /// The option's value: absent is the default, an empty string turns it off.
    pub fn from_option(v: Option<String>) -> Self {
        match v {
            None => CacheDir::Default,
            Some(s) if s.is_empty() => CacheDir::Off,
            Some(s) => CacheDir::At(PathBuf::from(s)),
        }
    }

    fn dir(&self) -> Option<PathBuf> {
        match self {
            CacheDir::Off => None,
            CacheDir::At(p) => Some(p.clone()),
            CacheDir::Default => default_dir(),
        }
    }
}

/// `%LOCALAPPDATA%\webnn-node` (Windows), `~/Library/Caches/webnn-node` (macOS),
/// `$XDG_CACHE_HOME/webnn-node` or `~/.cache/webnn-node` (elsewhere).
fn default_dir() -> Option<PathBuf> {
    let absolute = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = if cfg!(target_os = "windows") {
        absolute("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        absolute("HOME").map(|h| h.join("Library").join("Caches"))
    } else {
        absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache")))
    };
    base.map(|b| b.join("webnn-node"))
}

const MAGIC: &[u8; 8] = b"WNNPIPE1";
const HEADER: usize = 24;
/// Larger files are ignored (and not written): the cache only grows, so one
/// that reaches this starts over.
const MAX_BYTES: usize = 256 << 20;

/// A 64-bit checksum (one odd multiply and a rotation per 8-byte word, the
/// length in the seed): each step is a bijection of the state, so any change
/// within one word, or of the length, changes the sum. It catches truncated and
/// damaged files, not forgeries (whoever can write the user's cache directory
/// can run code as the user anyway).
fn checksum(data: &[u8]) -> u64 {
    let mut x: u64 = 0xcbf2_9ce4_8422_2325 ^ data.len() as u64;
    let mut mix = |w: u64| x = (x ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        mix(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    mix(u64::from_le_bytes(tail));
    x
}

fn file_name(info: &wgpu::AdapterInfo) -> String {
    let mut h = std::hash::DefaultHasher::new();
    for part in [&info.name, &info.driver, &info.driver_info, env!("CARGO_PKG_VERSION")] {
        h.write(part.as_bytes());
        h.write_u8(0);
    }
    format!("gpu-pipelines-{:x}-{:x}-{:016x}.bin", info.vendor, info.device, h.finish())
}

/// The data of a saved cache file, if it is whole.
fn read(file: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut head = [0u8; HEADER];
    if f.read_exact(&mut head).is_err() || &head[..8] != MAGIC {
        return Ok(None);
    }
    let len = u64::from_le_bytes(head[8..16].try_into().unwrap_or([0; 8]));
    let sum = u64::from_le_bytes(head[16..24].try_into().unwrap_or([0; 8]));
    let Ok(len) = usize::try_from(len) else { return Ok(None) };
    if len > MAX_BYTES {
        return Ok(None);
    }
    let mut data = Vec::new();
    if data.try_reserve_exact(len).is_err() {
        return Ok(None);
    }
    // One byte more than announced tells a file that grew from one that fits.
    f.take(len as u64 + 1).read_to_end(&mut data)?;
    if data.len() != len || checksum(&data) != sum {
        return Ok(None);
    }
    Ok(Some(data))
}

fn write(file: &Path, data: &[u8]) -> std::io::Result<()> {
    static SAVES: AtomicU64 = AtomicU64::new(0);
    let n = SAVES.fetch_add(1, Ordering::Relaxed);
    let tmp = file.with_extension(format!("{}.{n}.tmp", std::process::id()));
    let mut bytes = Vec::with_capacity(HEADER + data.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(data.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&checksum(data).to_le_bytes());
    bytes.extend_from_slice(data);
    let written = std::fs::write(&tmp, &bytes).and_then(|()| std::fs::rename(&tmp, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A context's pipeline cache and the file it is saved to.
pub(super) struct DiskCache {
    pub cache: wgpu::PipelineCache,
    file: PathBuf,
    /// Length of the data last read or written (saves are skipped while the
    /// driver's data has not changed size).
    saved: Mutex<usize>,
}

impl DiskCache {
    /// Opens the cache of `adapter` in `dir` (nothing where the device lacks
    /// `PIPELINE_CACHE` or the directory is off).
    pub fn open(device: &wgpu::Device, info: &wgpu::AdapterInfo, dir: &CacheDir) -> Option<Self> {
        if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let dir = dir.dir()?;
        let file = dir.join(file_name(info));
        let data = match read(&file) {
            Ok(d) => d,
            Err(e) => {
                log(LogLevel::Info, || format!("GPU pipeline cache {} not read: {e}", file.display()));
                None
            }
        };
        let loaded = data.as_ref().map_or(0, Vec::len);
        // SAFETY: the data is either absent or exactly the bytes this engine wrote
        // from `PipelineCache::get_data` for an adapter of the same name, driver
        // and package version (the file name), whole (length and checksum
        // checked); wgpu validates its header against this adapter and driver,
        // and `fallback` makes a rejected cache an empty one instead of an error.
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("webnn pipelines"),
                data: data.as_deref(),
                fallback: true,
            })
        };
        log(LogLevel::Info, || {
            format!("GPU pipeline cache {}: {} bytes loaded", file.display(), loaded)
        });
        Some(DiskCache { cache, file, saved: Mutex::new(loaded) })
    }

    /// Writes the cache's data to its file, if it changed since the last read or
    /// write. Errors are logged, never returned.
    pub fn save(&self) {
        let Some(data) = self.cache.get_data() else { return };
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        if data.len() == *saved || data.len() > MAX_BYTES {
            return;
        }
        let dir = self.file.parent().unwrap_or(Path::new("."));
        let started = std::time::Instant::now();
        match std::fs::create_dir_all(dir).and_then(|()| write(&self.file, &data)) {
            Ok(()) => {
                *saved = data.len();
                log(LogLevel::Debug, || {
                    format!(
                        "GPU pipeline cache {}: {} bytes saved in {} ms",
                        self.file.display(),
                        data.len(),
                        started.elapsed().as_millis()
                    )
                });
            }
            Err(e) => log(LogLevel::Info, || format!("GPU pipeline cache {} not saved: {e}", self.file.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("webnn-cache-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn files_round_trip_and_damaged_ones_are_ignored() {
        let d = temp("roundtrip");
        let f = d.join("c.bin");
        assert_eq!(read(&f).unwrap(), None, "a missing file is no data");
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        write(&f, &data).unwrap();
        assert_eq!(read(&f).unwrap().as_deref(), Some(&data[..]));
        let whole = std::fs::read(&f).unwrap();
        assert_eq!(whole.len(), HEADER + data.len());
        // Truncated, grown, one bit flipped, wrong magic, absurd length: ignored.
        let mut cases: Vec<Vec<u8>> = vec![whole[..whole.len() - 1].to_vec(), [&whole[..], &[0]].concat()];
        for at in [HEADER, HEADER + 500, whole.len() - 1, 3, 9, 17] {
            let mut w = whole.clone();
            w[at] ^= 0x10;
            cases.push(w);
        }
        let mut huge = whole.clone();
        huge[8..16].copy_from_slice(&(u64::MAX).to_le_bytes());
        cases.push(huge);
        cases.push(whole[..5].to_vec());
        for (k, c) in cases.iter().enumerate() {
            std::fs::write(&f, c).unwrap();
            assert_eq!(read(&f).unwrap(), None, "damaged file {k} must be ignored");
        }
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 1, "{left:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn checksum_sees_every_byte_and_the_length() {
        let data: Vec<u8> = (0..37u8).collect();
        let base = checksum(&data);
        for i in 0..data.len() {
            let mut d = data.clone();
            d[i] ^= 1;
            assert_ne!(checksum(&d), base, "byte {i}");
        }
        assert_ne!(checksum(&data[..36]), base);
        assert_ne!(checksum(&[0u8; 8]), checksum(&[0u8; 16]));
    }

    #[test]
    fn option_values() {
        assert_eq!(CacheDir::from_option(None), CacheDir::Default);
        assert_eq!(CacheDir::from_option(Some(String::new())), CacheDir::Off);
        assert_eq!(CacheDir::from_option(Some("/x".into())), CacheDir::At("/x".into()));
        assert_eq!(CacheDir::Off.dir(), None);
    }
}
