// Where a stored model connection may send its key (docs/security.md). The administrator is
// trusted and local servers (Ollama, vLLM, llama.cpp on loopback or the LAN) are a main use, so
// private addresses are allowed; what is refused is the link-local cloud-metadata service
// (169.254.0.0/16, fd00:ec2::254), whose credentials a request from the server could read — both
// as a literal in the base URL and as what a host name resolves to at connection time — unless
// the config file allows it (`modelConnections.allowMetadataAddresses`). Redirects are never
// followed: node:http does not follow them, and a 3xx answer is reported as such.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import type { ProviderAgent } from './provider-transport.ts'

/** The error code a refused address fails the connection with (shown in words by the Test). */
export const METADATA_ADDRESS_CODE = 'EMETADATAADDRESS'

const IDLE_SOCKET_MS = 4_000

/** 169.254.0.0/16 (IPv4 link-local, where cloud metadata services answer), also IPv4-mapped; fd00:ec2::254 (AWS over IPv6). */
export function isMetadataAddress(address: string): boolean {
  let value = address.trim().toLowerCase()
  if (value.startsWith('[') && value.endsWith(']')) value = value.slice(1, -1)
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(value)
  if (mapped) value = mapped[1]!
  if (isIP(value) === 4) return value.startsWith('169.254.')
  if (isIP(value) === 6) return expandIpv6(value) === expandIpv6('fd00:ec2::254') || /^::ffff:a9fe:/.test(value)
  return false
}

function expandIpv6(address: string): string {
  const [head = '', tail = ''] = address.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === '' ? [] : tail.split(':')
  const middle = address.includes('::') ? Array(8 - left.length - right.length).fill('0') : []
  return [...left, ...middle, ...right].map((part) => part.padStart(4, '0')).join(':')
}

/**
 * A connection's base URL as the form gives it: an absolute http(s) URL without credentials in it,
 * not a metadata address unless allowed. Returns the normalised URL or a message in words.
 */
export function checkConnectionBaseUrl({
  baseUrl,
  allowMetadataAddresses,
}: {
  readonly baseUrl: string
  readonly allowMetadataAddresses: boolean
}): { readonly ok: true; readonly baseUrl: string } | { readonly ok: false; readonly message: string } {
  const text = baseUrl.trim()
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return { ok: false, message: 'The base URL must be an absolute address such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1.' }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, message: 'The base URL must start with http:// or https://.' }
  if (url.username !== '' || url.password !== '') return { ok: false, message: 'The base URL must not carry a user name or password; put the key in the API key field.' }
  if (url.search !== '' || url.hash !== '') return { ok: false, message: 'The base URL must not have a query or fragment.' }
  if (!allowMetadataAddresses && isMetadataAddress(url.hostname)) {
    return { ok: false, message: `The base URL points at a link-local cloud-metadata address (${url.hostname}); it is refused unless the config file sets modelConnections.allowMetadataAddresses.` }
  }
  return { ok: true, baseUrl: url.href.replace(/\/+$/, '') }
}

/** dns.lookup, failing with METADATA_ADDRESS_CODE when any resolved address is a metadata address. */
export function metadataRefusingLookup({ resolve = dnsLookup }: { readonly resolve?: typeof dnsLookup | undefined } = {}): LookupFunction {
  return ((hostname: string, options: LookupOptions, callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0)
      const list = addresses as LookupAddress[]
      if (list.some((entry) => isMetadataAddress(entry.address))) {
        const refused: NodeJS.ErrnoException = new Error(`${hostname} resolves to a cloud-metadata address`)
        refused.code = METADATA_ADDRESS_CODE
        return callback(refused, '', 0)
      }
      if (options.all === true) return callback(null, list)
      const first = list[0]
      if (first === undefined) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0)
      callback(null, first.address, first.family)
    })
  }) as LookupFunction
}

/** Keep-alive connection pools for stored connections: host names are resolved through `metadataRefusingLookup` unless allowed. */
export function makeConnectionAgents({
  allowMetadataAddresses,
  resolve,
}: {
  readonly allowMetadataAddresses: boolean
  /** The resolver (dns.lookup unless a test gives one). */
  readonly resolve?: typeof dnsLookup | undefined
}): {
  readonly agentFor: (url: string) => ProviderAgent
  readonly destroy: () => void
} {
  const lookup = allowMetadataAddresses ? undefined : metadataRefusingLookup({ resolve })
  const http = new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS, ...(lookup ? { lookup } : {}) })
  const https = new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS, ...(lookup ? { lookup } : {}) })
  return {
    agentFor: (url) => (url.startsWith('https:') ? https : http),
    destroy: () => {
      http.destroy()
      https.destroy()
    },
  }
}
