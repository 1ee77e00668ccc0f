//! Key files: created new (never over an existing path or through a symlink), with explicit
//! modes whatever the umask, read within a bound, with the operating system's error kept.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(unix)]

use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use jouleclaw_jcr1::Jcr1Error;
use jouleclaw_jcr1::cose::{self, Signer, SoftwareSigner};

/// A fresh empty directory under the system's temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("jc-keyfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).unwrap();
        Self(p)
    }
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn io_kind(e: &Jcr1Error) -> ErrorKind {
    match e {
        Jcr1Error::Io { kind, .. } => *kind,
        other => panic!("not an I/O error: {other:?}"),
    }
}

#[test]
fn a_secret_key_file_refuses_an_existing_path_with_the_os_error() {
    let dir = TempDir::new("exists");
    let path = dir.join("k.sec");
    std::fs::write(&path, "keep me").unwrap();
    let e = SoftwareSigner::generate()
        .write_key_file(&path)
        .unwrap_err();
    assert_eq!(io_kind(&e), ErrorKind::AlreadyExists);
    assert_eq!(e.code(), "io_failed");
    assert!(e.to_string().contains("os error 17"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
}

#[test]
fn a_dangling_symlink_is_an_existing_path_and_its_target_is_never_created() {
    let dir = TempDir::new("symlink");
    let target = dir.join("target");
    let link = dir.join("k.sec");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let signer = SoftwareSigner::generate();
    assert_eq!(
        io_kind(&signer.write_key_file(&link).unwrap_err()),
        ErrorKind::AlreadyExists
    );
    assert_eq!(
        io_kind(&cose::write_public_key_file(&signer.verifying_key(), &link).unwrap_err()),
        ErrorKind::AlreadyExists
    );
    assert!(!target.exists());
    // A symlink to an existing secret key: the key is not replaced.
    let secret = dir.join("real.sec");
    signer.write_key_file(&secret).unwrap();
    let before = std::fs::read(&secret).unwrap();
    let link2 = dir.join("k.pub");
    std::os::unix::fs::symlink(&secret, &link2).unwrap();
    assert!(cose::write_public_key_file(&signer.verifying_key(), &link2).is_err());
    assert_eq!(std::fs::read(&secret).unwrap(), before);
}

#[test]
fn a_key_pair_refuses_equal_paths_before_creating_anything() {
    let dir = TempDir::new("equal");
    let path = dir.join("k");
    let e = cose::write_key_pair(&SoftwareSigner::generate(), &path, &path).unwrap_err();
    assert_eq!(e.code(), "bad_key_file");
    assert!(!path.exists());
}

#[test]
fn a_key_pair_whose_public_path_exists_leaves_no_secret_behind() {
    let dir = TempDir::new("pair");
    let secret = dir.join("k.sec");
    // The public path is a dangling symlink to the secret's path: once the secret exists the
    // symlink would lead to it, but creating the public file refuses the existing name.
    let public = dir.join("k.pub");
    std::os::unix::fs::symlink(&secret, &public).unwrap();
    let signer = SoftwareSigner::generate();
    let e = cose::write_key_pair(&signer, &secret, &public).unwrap_err();
    assert_eq!(io_kind(&e), ErrorKind::AlreadyExists);
    assert!(!secret.exists(), "the secret key file was left behind");
    // Two names of one file (`./k` and `k`) are refused the same way.
    let a = dir.join("same");
    let b = dir.join(".").join("same");
    assert!(cose::write_key_pair(&signer, &a, &b).is_err());
    assert!(!a.exists());
    // The accepted neighbour: two new paths.
    let public = dir.join("k2.pub");
    cose::write_key_pair(&signer, &secret, &public).unwrap();
    assert_eq!(
        SoftwareSigner::read_key_file(&secret)
            .unwrap()
            .verifying_key(),
        signer.verifying_key()
    );
    assert_eq!(
        cose::read_public_key_file(&public).unwrap(),
        signer.verifying_key()
    );
}

/// The modes are set explicitly: run the writes in a child process whose umask is 0777 (which
/// would leave mode 0000) and 0 (which would leave the open mode as asked).
#[test]
fn key_files_get_0600_and_0644_whatever_the_umask() {
    const CHILD: &str = "JC_KEYFILE_UMASK_CHILD";
    if let Some(dir) = std::env::var_os(CHILD) {
        let dir = PathBuf::from(dir);
        let signer = SoftwareSigner::generate();
        cose::write_key_pair(&signer, &dir.join("k.sec"), &dir.join("k.pub")).unwrap();
        return;
    }
    for umask in ["0777", "0000", "0077"] {
        let dir = TempDir::new(&format!("umask{umask}"));
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "keyfile::key_files_get_0600_and_0644_whatever_the_umask",
                "--test-threads=1",
            ])
            .env(CHILD, &dir.0)
            .status()
            .unwrap();
        assert!(status.success(), "umask {umask}");
        assert_eq!(mode(&dir.join("k.sec")), 0o600, "umask {umask}");
        assert_eq!(mode(&dir.join("k.pub")), 0o644, "umask {umask}");
    }
}

#[test]
fn reading_a_key_reads_at_most_95_bytes() {
    // /dev/zero never ends: the read stops at the bound and refuses.
    for e in [
        cose::read_public_key_file(Path::new("/dev/zero")).unwrap_err(),
        SoftwareSigner::read_key_file(Path::new("/dev/zero")).unwrap_err(),
    ] {
        assert_eq!(e.code(), "bad_key_file", "{e}");
    }
    let dir = TempDir::new("long");
    let text = cose::public_key_text(&SoftwareSigner::rfc8032_test_key().verifying_key());
    let exact = dir.join("exact.pub");
    std::fs::write(&exact, &text).unwrap();
    assert!(cose::read_public_key_file(&exact).is_ok());
    let long = dir.join("long.pub");
    std::fs::write(&long, format!("{text}\n")).unwrap();
    assert_eq!(
        cose::read_public_key_file(&long).unwrap_err().code(),
        "bad_key_file"
    );
    assert_eq!(cose::MAX_KEY_FILE_BYTES, 95);
    assert_eq!(text.len() as u64, cose::MAX_KEY_FILE_BYTES - 1);
}

#[test]
fn key_file_read_errors_keep_the_os_error() {
    let dir = TempDir::new("missing");
    let missing = dir.join("nope");
    for e in [
        cose::read_public_key_file(&missing).unwrap_err(),
        SoftwareSigner::read_key_file(&missing).unwrap_err(),
    ] {
        assert_eq!(io_kind(&e), ErrorKind::NotFound);
        assert!(e.to_string().contains("os error 2"), "{e}");
    }
    // A directory: the error is the OS's (EISDIR), not a parse failure.
    let e = SoftwareSigner::read_key_file(&dir.0).unwrap_err();
    assert_eq!(e.code(), "io_failed", "{e}");
}

#[test]
fn a_secret_key_readable_by_group_or_others_gets_a_warning() {
    let dir = TempDir::new("perm");
    let path = dir.join("k.sec");
    SoftwareSigner::generate().write_key_file(&path).unwrap();
    assert_eq!(cose::check_secret_key_permissions(&path).unwrap(), None);
    for m in [0o640, 0o604, 0o644, 0o620, 0o601] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m)).unwrap();
        let w = cose::check_secret_key_permissions(&path).unwrap().unwrap();
        assert_eq!(w.mode & 0o777, m);
        assert!(w.to_string().contains(&format!("{m:04o}")), "{w}");
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    assert_eq!(cose::check_secret_key_permissions(&path).unwrap(), None);
}

#[test]
fn a_public_key_file_refuses_weak_and_non_canonical_keys() {
    use curve25519_dalek::constants::EIGHT_TORSION;
    for t in EIGHT_TORSION {
        let text = format!(
            "{}{}\n",
            cose::PUBLIC_KEY_PREFIX,
            hex::encode(t.compress().as_bytes())
        );
        assert_eq!(
            cose::parse_public_key_text(&text).unwrap_err().code(),
            "bad_key_file"
        );
    }
    // y = 1 + p: the identity, non-canonically.
    let mut b = [0xff; 32];
    b[0] = 0xee;
    b[31] = 0x7f;
    let text = format!("{}{}", cose::PUBLIC_KEY_PREFIX, hex::encode(b));
    assert_eq!(
        cose::parse_public_key_text(&text).unwrap_err(),
        Jcr1Error::KeyFile {
            detail: "not the canonical encoding of an Ed25519 public key"
        }
    );
    let good = cose::public_key_text(&SoftwareSigner::rfc8032_test_key().verifying_key());
    assert!(cose::parse_public_key_text(&good).is_ok());
}

/// The detail of a `bad_key_file` refusal.
fn key_file_detail(e: Jcr1Error) -> &'static str {
    match e {
        Jcr1Error::KeyFile { detail } => detail,
        other => panic!("not a key file refusal: {other:?}"),
    }
}

#[test]
fn key_files_say_which_key_they_hold() {
    let test_key = SoftwareSigner::rfc8032_test_key();
    assert_eq!(
        cose::public_key_text(&test_key.verifying_key()),
        "jouleclaw-ed25519-public-key \
         d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\n"
    );
    assert!(
        test_key
            .key_file_text()
            .starts_with("jouleclaw-ed25519-secret-key 9d61b19d")
    );
    // A seed whose digits are also a valid public key.
    let seed = (0u8..=255)
        .map(|i| [i; 32])
        .find(|s| cose::public_key_from_bytes(s).is_ok())
        .expect("a seed that is also a public key");
    let signer = SoftwareSigner::from_seed(&seed);
    let secret = signer.key_file_text();
    let public = cose::public_key_text(&signer.verifying_key());
    assert_eq!(
        cose::parse_public_key_text(&public).unwrap(),
        signer.verifying_key()
    );
    assert_eq!(
        SoftwareSigner::from_key_file_text(&secret)
            .unwrap()
            .verifying_key(),
        signer.verifying_key()
    );
    // A secret key file is never a public key, even when its seed's digits are one.
    let e = cose::parse_public_key_text(&secret).unwrap_err();
    assert_eq!(e.code(), "bad_key_file");
    assert!(key_file_detail(e).starts_with("a secret key file, not a public key file"));
    // And a public key file is never a secret key.
    let e = SoftwareSigner::from_key_file_text(&public).unwrap_err();
    assert_eq!(
        key_file_detail(e),
        "a public key file, not a secret key file"
    );
    // The same from files.
    let dir = TempDir::new("kinds");
    let (sec, publ) = (dir.join("k.sec"), dir.join("k.pub"));
    cose::write_key_pair(&signer, &sec, &publ).unwrap();
    assert_eq!(std::fs::read_to_string(&publ).unwrap(), public);
    assert_eq!(std::fs::read_to_string(&sec).unwrap(), *secret);
    assert!(
        key_file_detail(cose::read_public_key_file(&sec).unwrap_err())
            .starts_with("a secret key file")
    );
    assert_eq!(
        key_file_detail(SoftwareSigner::read_key_file(&publ).unwrap_err()),
        "a public key file, not a secret key file"
    );
}

#[test]
fn an_untyped_key_file_is_never_a_public_key_and_a_secret_key_only_from_an_owner_only_file() {
    let signer = SoftwareSigner::rfc8032_test_key();
    // A seed whose 32 bytes are also a valid public key: the untyped format cannot tell.
    let seed = (0u8..=255)
        .map(|i| [i; 32])
        .find(|s| cose::public_key_from_bytes(s).is_ok())
        .expect("a seed that is also a public key");
    let untyped = format!("{}\n", hex::encode(seed));
    let e = cose::parse_public_key_text(&untyped).unwrap_err();
    assert!(
        key_file_detail(e).starts_with("an untyped key file"),
        "{untyped}"
    );
    let e = SoftwareSigner::from_key_file_text(&untyped).unwrap_err();
    assert!(key_file_detail(e).starts_with("an untyped key file"));
    let dir = TempDir::new("untyped");
    let path = dir.join("old.key");
    std::fs::write(&path, &untyped).unwrap();
    // Owner-only (0600, as keygen always wrote secret keys): read as the secret key it was.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        SoftwareSigner::read_key_file(&path)
            .unwrap()
            .verifying_key(),
        SoftwareSigner::from_seed(&seed).verifying_key()
    );
    assert!(cose::read_public_key_file(&path).is_err());
    // Readable by others (0644, as keygen wrote public keys): refused as a secret key too.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = SoftwareSigner::read_key_file(&path).unwrap_err();
    assert!(key_file_detail(e).starts_with("an untyped key file"));
    let e = cose::read_public_key_file(&path).unwrap_err();
    assert!(key_file_detail(e).starts_with("an untyped key file"));
    // The neighbours: the typed files are read whatever their mode.
    let typed = dir.join("new.key");
    std::fs::write(&typed, signer.key_file_text().as_bytes()).unwrap();
    std::fs::set_permissions(&typed, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(SoftwareSigner::read_key_file(&typed).is_ok());
}

#[test]
fn a_public_key_file_refuses_a_key_with_a_torsion_component() {
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
    let a = curve25519_dalek::Scalar::from(7u8);
    let mixed = (ED25519_BASEPOINT_POINT * a + EIGHT_TORSION[4])
        .compress()
        .0;
    let text = format!("{}{}\n", cose::PUBLIC_KEY_PREFIX, hex::encode(mixed));
    assert_eq!(
        key_file_detail(cose::parse_public_key_text(&text).unwrap_err()),
        "an Ed25519 public key with a torsion component (not of prime order)"
    );
    let prime = (ED25519_BASEPOINT_POINT * a).compress().0;
    let text = format!("{}{}\n", cose::PUBLIC_KEY_PREFIX, hex::encode(prime));
    assert!(cose::parse_public_key_text(&text).is_ok());
}
