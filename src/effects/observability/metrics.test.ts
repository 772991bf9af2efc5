import { describe, expect, it } from 'vitest'
import { createServiceMetrics, MAX_VALUES_PER_LABEL, NO_METRICS } from './metrics.ts'

describe('service metrics', () => {
  it('admits at most MAX_VALUES_PER_LABEL values of a label; later ones are counted as "other"', async () => {
    const metrics = createServiceMetrics()
    try {
      for (let i = 0; i < MAX_VALUES_PER_LABEL + 10; i++) metrics.toolCall(`tool_${i}`, 'ok')
      const text = await metrics.render()
      const series = text.split('\n').filter((line) => line.startsWith('knowagent_tool_calls_total{'))
      expect(series).toHaveLength(MAX_VALUES_PER_LABEL + 1)
      expect(series).toContain('knowagent_tool_calls_total{tool="other",result="ok"} 10')
    } finally {
      metrics.close()
    }
  })

  it('keeps a label value printable and short', async () => {
    const metrics = createServiceMetrics()
    try {
      metrics.providerRequest('model "x"\n{evil}', 'ok')
      const line = (await metrics.render()).split('\n').find((candidate) => candidate.startsWith('knowagent_provider_requests_total{'))
      expect(line).toBe('knowagent_provider_requests_total{model="model__x__{evil}",result="ok"} 1')
    } finally {
      metrics.close()
    }
  })

  it('two services never share a series', async () => {
    const one = createServiceMetrics()
    const two = createServiceMetrics()
    try {
      one.turnStarted('local')
      expect(await one.render()).toContain('knowagent_turns_started_total{model="local"} 1')
      expect(await two.render()).not.toContain('knowagent_turns_started_total')
    } finally {
      one.close()
      two.close()
    }
  })

  it('switched off, counts nothing and renders nothing', async () => {
    NO_METRICS.turnStarted('local')
    NO_METRICS.streamOpened()()
    expect(NO_METRICS.enabled).toBe(false)
    expect(await NO_METRICS.render()).toBe('')
  })
})
