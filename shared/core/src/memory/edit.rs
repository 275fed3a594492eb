//! The commands over the file store: reads, guarded writes, directories derived from the
//! flat namespace.

use super::paths::{resolve, shown, MemoryPath};
use super::text;
use super::{Fail, Step};
use crate::service::{FileRead, MAX_LIST_LIMIT};
use crate::{
    FileMeta, FilePath, Identity, PutRequest, StoredFile, WorkspaceError, WorkspaceService,
};
use std::collections::BTreeMap;

/// Rounds of read-modify-write before an edit gives up under contention (each round at
/// least one writer of the file wins, so 64 outlast far more than 16 concurrent editors).
const EDIT_ATTEMPTS: usize = 64;

pub(super) struct Memory<'a> {
    pub service: &'a WorkspaceService,
    pub who: &'a Identity,
    pub prefix: &'a str,
}

fn missing(p: &MemoryPath) -> Fail {
    Fail::Tool(format!(
        "The path {} does not exist. Please provide a valid path.",
        p.shown
    ))
}

/// A directory tree of file sizes, from the flat paths under a directory.
#[derive(Default)]
struct Node {
    /// Bytes of every file at or under this name.
    total: u64,
    file: Option<u64>,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn add(&mut self, segments: &[&str], size: u64) {
        self.total += size;
        match segments {
            [] => {}
            [name] => {
                let leaf = self.children.entry((*name).to_owned()).or_default();
                leaf.total += size;
                leaf.file = Some(size);
            }
            [dir, rest @ ..] => self
                .children
                .entry((*dir).to_owned())
                .or_default()
                .add(rest, size),
        }
    }

    /// Entries up to two levels deep, depth first by name, hidden ones (and what is under
    /// them) skipped: what the reference implementation lists.
    fn entries(&self, base: &str, depth: usize, out: &mut Vec<(u64, String)>) {
        for (name, node) in &self.children {
            if name.starts_with('.') {
                continue;
            }
            let rel = if base.is_empty() {
                name.clone()
            } else {
                format!("{base}/{name}")
            };
            if let Some(size) = node.file {
                out.push((size, rel.clone()));
            }
            if !node.children.is_empty() {
                out.push((node.total - node.file.unwrap_or(0), format!("{rel}/")));
                if depth < 2 {
                    node.entries(&rel, depth + 1, out);
                }
            }
        }
    }
}

impl Memory<'_> {
    fn resolve(&self, path: &str) -> Step<MemoryPath> {
        resolve(self.prefix, path).map_err(Fail::Tool)
    }

    /// The file at `p` (none for a directory or nothing), whole.
    async fn read(&self, p: &MemoryPath) -> Step<Option<StoredFile>> {
        match &p.file {
            Some(file) => self.read_file(file, &p.shown).await,
            None => Ok(None),
        }
    }

    /// Workspace file `file` whole (`shown` names it in answers); `None` when absent.
    async fn read_file(&self, file: &FilePath, shown: &str) -> Step<Option<StoredFile>> {
        match self.service.open(self.who, file, None).await {
            Ok(FileRead::Inline(f)) => Ok(Some(f)),
            Ok(FileRead::Download { meta, .. }) => Err(Fail::Tool(format!(
                "The file {shown} is {} bytes, over the {} bytes (maxFileBytes) the memory tool reads at once",
                meta.size,
                self.service.limits().max_file_bytes
            ))),
            Err(WorkspaceError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The file at `p` as text with its etag.
    async fn read_text(&self, p: &MemoryPath) -> Step<Option<(String, StoredFile)>> {
        let Some(f) = self.read(p).await? else {
            return Ok(None);
        };
        match String::from_utf8(f.content.clone()) {
            Ok(t) => Ok(Some((t, f))),
            Err(_) => Err(Fail::Tool(format!(
                "The file {} is not UTF-8 text, so the memory tool cannot show or edit it",
                p.shown
            ))),
        }
    }

    /// Every file under `p` as a directory.
    async fn under(&self, p: &MemoryPath) -> Step<Vec<FileMeta>> {
        let mut out = Vec::new();
        let mut after: Option<FilePath> = None;
        loop {
            let page = self
                .service
                .list(self.who, &p.under, Some(MAX_LIST_LIMIT), after.as_ref())
                .await?;
            out.extend(page.files);
            match page.next_after {
                Some(a) => after = Some(a),
                None => return Ok(out),
            }
        }
    }

    async fn is_dir(&self, p: &MemoryPath) -> Step<bool> {
        if p.is_root() {
            return Ok(true);
        }
        let page = self.service.list(self.who, &p.under, Some(1), None).await?;
        Ok(!page.files.is_empty())
    }

    /// Writes `content` at `file`: over exactly `etag`, or only where nothing is.
    async fn write(
        &self,
        file: &FilePath,
        content: Vec<u8>,
        content_type: Option<String>,
        etag: Option<&str>,
    ) -> crate::Result<StoredFile> {
        self.service
            .put(
                self.who,
                PutRequest {
                    merge: None,
                    path: Some(file.clone()),
                    content,
                    content_type,
                    if_match: etag.map(str::to_owned),
                    if_none_match_any: etag.is_none(),
                    idempotency_key: None,
                },
            )
            .await
    }

    pub async fn view(&self, path: &str, view_range: Option<&[i64]>) -> Step<String> {
        let p = self.resolve(path)?;
        if let Some((content, _)) = self.read_text(&p).await? {
            return text::view_file(&p.shown, &content, view_range).map_err(Fail::Tool);
        }
        if !self.is_dir(&p).await? {
            return Err(missing(&p));
        }
        let mut tree = Node::default();
        for f in self.under(&p).await? {
            let rel = &f.path[p.under.as_str().len()..];
            tree.add(&rel.split('/').collect::<Vec<_>>(), f.size);
        }
        let mut entries = Vec::new();
        tree.entries("", 1, &mut entries);
        Ok(text::view_directory(&p.shown, tree.total, &entries))
    }

    pub async fn create(&self, path: &str, file_text: &str) -> Step<String> {
        let p = self.resolve(path)?;
        let exists = || Fail::Tool(format!("File {} already exists", p.shown));
        let Some(file) = &p.file else {
            return Err(exists());
        };
        if self.is_dir(&p).await? {
            return Err(exists());
        }
        match self
            .write(file, file_text.as_bytes().to_vec(), None, None)
            .await
        {
            Ok(_) => Ok(format!("File created successfully at: {}", p.shown)),
            Err(WorkspaceError::Conflict { .. }) => Err(exists()),
            Err(e) => Err(e.into()),
        }
    }

    /// Applies `change` to the file's text until the write lands on the version it read.
    async fn edit<F>(&self, p: &MemoryPath, change: F) -> Step<String>
    where
        F: Fn(&str) -> Result<(String, String), String>,
    {
        for _ in 0..EDIT_ATTEMPTS {
            let Some((content, read)) = self.read_text(p).await? else {
                return Err(if self.is_dir(p).await? {
                    Fail::Tool(format!("The path {} is not a file.", p.shown))
                } else {
                    missing(p)
                });
            };
            let (updated, answer) = change(&content).map_err(Fail::Tool)?;
            let file = p.file.as_ref().ok_or_else(|| missing(p))?;
            let kept_type = Some(read.meta.content_type.clone());
            match self
                .write(file, updated.into_bytes(), kept_type, Some(&read.meta.etag))
                .await
            {
                Ok(_) => return Ok(answer),
                // Someone wrote in between: judge the edit again against what is there now.
                Err(WorkspaceError::Conflict { .. } | WorkspaceError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(Fail::Tool(format!(
            "The memory file {} kept changing while this edit was applied ({EDIT_ATTEMPTS} attempts); nothing was changed, retry",
            p.shown
        )))
    }

    pub async fn str_replace(&self, path: &str, old: &str, new: &str) -> Step<String> {
        let p = self.resolve(path)?;
        self.edit(&p, |content| text::str_replace(&p.shown, content, old, new))
            .await
    }

    pub async fn insert(&self, path: &str, at: i64, line: &str) -> Step<String> {
        let p = self.resolve(path)?;
        let done = format!("The file {} has been edited.", p.shown);
        self.edit(&p, |content| {
            text::insert(content, at, line).map(|t| (t, done.clone()))
        })
        .await
    }

    pub async fn delete(&self, path: &str) -> Step<String> {
        let p = self.resolve(path)?;
        if p.is_root() {
            return Err(Fail::Tool(
                "Cannot delete the /memories directory itself".to_owned(),
            ));
        }
        let mut deleted = false;
        if let Some(file) = &p.file {
            match self.service.delete(self.who, file, None).await {
                Ok(()) => deleted = true,
                Err(WorkspaceError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        for f in self.under(&p).await? {
            let file = FilePath::parse(&f.path)?;
            match self.service.delete(self.who, &file, None).await {
                Ok(()) | Err(WorkspaceError::NotFound(_)) => deleted = true,
                Err(e) => return Err(e.into()),
            }
        }
        if deleted {
            Ok(format!("Successfully deleted {}", p.shown))
        } else {
            Err(Fail::Tool(format!("The path {} does not exist", p.shown)))
        }
    }

    pub async fn rename(&self, old_path: &str, new_path: &str) -> Step<String> {
        let from = self.resolve(old_path)?;
        let to = self.resolve(new_path)?;
        let taken = || Fail::Tool(format!("The destination {} already exists", to.shown));
        let (Some(src), Some(dst)) = (&from.file, &to.file) else {
            return Err(if from.is_root() {
                Fail::Tool("Cannot rename the /memories directory itself".to_owned())
            } else {
                taken()
            });
        };
        if let Some(there) = self.read(&to).await? {
            return match self.finish_move(src, &there).await? {
                true => Ok(format!(
                    "Successfully renamed {} to {}",
                    from.shown, to.shown
                )),
                false => Err(taken()),
            };
        }
        if self.is_dir(&to).await? {
            return Err(taken());
        }
        if dst.as_str().starts_with(from.under.as_str()) {
            return Err(Fail::Tool(format!(
                "Cannot rename {} into itself ({})",
                from.shown, to.shown
            )));
        }
        let done = format!("Successfully renamed {} to {}", from.shown, to.shown);
        if self.move_file(src, dst).await?.is_some() {
            return Ok(done);
        }
        let files = self.under(&from).await?;
        if files.is_empty() {
            return Err(Fail::Tool(format!(
                "The path {} does not exist",
                from.shown
            )));
        }
        for f in files {
            let rest = &f.path[from.under.as_str().len()..];
            let target = FilePath::parse(&format!("{}{rest}", to.under.as_str()))?;
            if self
                .move_file(&FilePath::parse(&f.path)?, &target)
                .await?
                .is_none()
            {
                continue; // deleted meanwhile: nothing to move
            }
        }
        Ok(done)
    }

    /// A rename run again after it stopped between its copy and its delete: the destination
    /// `there` already holds exactly the source's bytes (and content type), so the source is
    /// deleted, guarded by the etag read, and nothing is lost. `false` (the destination is
    /// taken) when there is no source or it differs from the destination.
    async fn finish_move(&self, src: &FilePath, there: &StoredFile) -> Step<bool> {
        let Some(read) = self
            .read_file(src, &shown(self.prefix, src.as_str()))
            .await?
        else {
            return Ok(false);
        };
        if read.content != there.content || read.meta.content_type != there.meta.content_type {
            return Ok(false);
        }
        match self
            .service
            .delete(self.who, src, Some(&read.meta.etag))
            .await
        {
            Ok(()) | Err(WorkspaceError::NotFound(_)) => Ok(true),
            // The source changed since it was read: the destination is not its copy now.
            Err(WorkspaceError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Moves one file: the destination is created only where nothing is, then the source
    /// is deleted only if it is still the version copied (else the newer one is copied
    /// over the copy first). Stopped midway, both exist: the file is never lost, and the
    /// rename run again finishes it ([`Self::finish_move`]). `None` when there is no source.
    async fn move_file(&self, src: &FilePath, dst: &FilePath) -> Step<Option<()>> {
        let mut copy_etag: Option<String> = None;
        for _ in 0..EDIT_ATTEMPTS {
            let Some(read) = self
                .read_file(src, &shown(self.prefix, src.as_str()))
                .await?
            else {
                return Ok(copy_etag.map(|_| ()));
            };
            let copied = self
                .write(
                    dst,
                    read.content,
                    Some(read.meta.content_type),
                    copy_etag.as_deref(),
                )
                .await;
            match copied {
                Ok(c) => copy_etag = Some(c.meta.etag),
                Err(WorkspaceError::Conflict { .. }) if copy_etag.is_none() => {
                    return Err(Fail::Tool(format!(
                        "The destination {} already exists",
                        shown(self.prefix, dst.as_str())
                    )))
                }
                Err(e) => return Err(e.into()),
            }
            match self
                .service
                .delete(self.who, src, Some(&read.meta.etag))
                .await
            {
                Ok(()) | Err(WorkspaceError::NotFound(_)) => return Ok(Some(())),
                // The source changed after it was copied: copy the newer one, then retry.
                Err(WorkspaceError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(Fail::Tool(format!(
            "{} kept changing while it was renamed; both it and {} exist now, retry",
            shown(self.prefix, src.as_str()),
            shown(self.prefix, dst.as_str())
        )))
    }
}
