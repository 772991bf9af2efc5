// The icon class of a tree, listing or search row: a folder, or a file by its extension.
export function fileIconClass({ kind, name }: { readonly kind: 'directory' | 'file'; readonly name: string }): string {
  if (kind === 'directory') return 'icon folder'
  const match = /\.([a-z0-9]{1,8})$/i.exec(name)
  return `icon file ext-${match ? match[1]!.toLowerCase() : 'none'}`
}
