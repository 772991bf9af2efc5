// The scripted model lives in the kit (src/testing/, `knowagent/testing`).
export * from '../../src/testing/scripted-model.ts'
