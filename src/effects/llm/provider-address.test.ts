import { describe, expect, it } from 'vitest'
import { request } from 'node:http'
import { checkConnectionBaseUrl, isMetadataAddress, makeConnectionAgents, METADATA_ADDRESS_CODE, metadataRefusingLookup } from './provider-address.ts'

describe('isMetadataAddress', () => {
  it.each(['169.254.169.254', '169.254.0.1', '::ffff:169.254.169.254', 'fd00:ec2::254', 'FD00:EC2:0:0:0:0:0:254', '[fd00:ec2::254]'])('refuses %s', (address) => {
    expect(isMetadataAddress(address)).toBe(true)
  })
  it.each(['127.0.0.1', '10.0.0.5', '192.168.1.20', '::1', 'fd00:ec2::253', 'localhost', 'api.openai.com'])('allows %s', (address) => {
    expect(isMetadataAddress(address)).toBe(false)
  })
})

describe('checkConnectionBaseUrl', () => {
  it('allows loopback and LAN servers, and trims a trailing slash', () => {
    expect(checkConnectionBaseUrl({ baseUrl: 'http://127.0.0.1:11434/v1/', allowMetadataAddresses: false })).toEqual({ ok: true, baseUrl: 'http://127.0.0.1:11434/v1' })
    expect(checkConnectionBaseUrl({ baseUrl: 'http://192.168.1.9:8000/v1', allowMetadataAddresses: false }).ok).toBe(true)
  })
  it.each(['http://169.254.169.254/latest', 'http://[fd00:ec2::254]/v1', 'http://0xa9fea9fe/v1', 'http://2852039166/v1'])('refuses the metadata address %s unless allowed', (baseUrl) => {
    const refused = checkConnectionBaseUrl({ baseUrl, allowMetadataAddresses: false })
    expect(refused.ok).toBe(false)
    expect(refused.ok ? '' : refused.message).toMatch(/metadata/)
    expect(checkConnectionBaseUrl({ baseUrl, allowMetadataAddresses: true }).ok).toBe(true)
  })
  it.each(['ftp://host/v1', 'not a url', 'http://user:pw@host/v1', 'http://host/v1?x=1'])('refuses %s', (baseUrl) => {
    expect(checkConnectionBaseUrl({ baseUrl, allowMetadataAddresses: false }).ok).toBe(false)
  })
})

describe('metadataRefusingLookup', () => {
  it('fails the connection when a host name resolves to a metadata address', async () => {
    const lookup = metadataRefusingLookup()
    const resolved = await new Promise<unknown>((resolve) => lookup('localhost', {}, (error, address) => resolve(error ?? address)))
    expect(typeof resolved).toBe('string')
    const refused = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookup('169.254.169.254', {}, (error) => resolve(error)))
    expect(refused?.code).toBe(METADATA_ADDRESS_CODE)
  })

  it('is what the agents use: a request to a name for a metadata address never connects', async () => {
    // A resolver that answers a metadata address for a host name (as a hostile DNS record would).
    const resolveToMetadata = ((_host: string, _options: unknown, callback: (error: null, addresses: Array<{ address: string; family: number }>) => void) =>
      callback(null, [{ address: '169.254.169.254', family: 4 }])) as unknown as typeof import('node:dns').lookup
    const agents = makeConnectionAgents({ allowMetadataAddresses: false, resolve: resolveToMetadata })
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => {
      const req = request({ host: 'metadata.example.test', port: 80, path: '/', agent: agents.agentFor('http://x') }, () => resolve(new Error('connected') as NodeJS.ErrnoException))
      req.on('error', resolve)
      req.end()
    })
    agents.destroy()
    expect(error.code).toBe(METADATA_ADDRESS_CODE)
  })
})
