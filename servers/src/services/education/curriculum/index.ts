import { deployment } from './deployment';
import { foundations } from './foundations';
import { memory } from './memory';
import { multiAgentSystems } from './multi-agent';
import { rag } from './rag';
import { toolUse } from './tool-use';
import type { CourseMaterial } from './types';

export type * from './types';

/** The six courses, in the order the catalog lists them. */
export const curriculum: readonly CourseMaterial[] = [foundations, toolUse, memory, multiAgentSystems, rag, deployment];
