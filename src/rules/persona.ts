/** A preset's system prompt. Pure and zod-free: workflow code renders it from the preset it runs with. */
import type { Preset } from '../contract/preset.js';

/** A preset's system prompt: its persona followed by its skills as named instruction blocks. */
export function renderPersona(preset: Pick<Preset, 'persona' | 'skills'>): string {
  const skills = Object.entries(preset.skills).map(([name, text]) => `### ${name}\n${text}`);
  return skills.length > 0 ? `${preset.persona}\n\n## Skills\n\n${skills.join('\n\n')}` : preset.persona;
}
